#pragma once
// Pictures of what a model predicts, written as PNG files with libpng: a grid of test
// digits with their predicted (P) and true (T) labels, misclassified ones framed in red
// (--predictions-png), and the confusion matrix (--confusion-png).

#include <png.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <tinynet/io/file.hpp>
#include <tinynet/tinynet.hpp>
#include <vector>

namespace mnist {

struct Rgb {
  std::uint8_t r, g, b;
};
inline constexpr Rgb kWhite{255, 255, 255}, kBlack{0, 0, 0}, kRed{220, 30, 30}, kGray{120, 120, 120};

/// An RGB image in memory, drawn on with rectangles and a 5x7 pixel font.
class Canvas {
 public:
  Canvas(int width, int height, Rgb fill)
      : w_(width), h_(height), px_(static_cast<std::size_t>(width * height), fill) {}
  int width() const { return w_; }
  int height() const { return h_; }
  void set(int x, int y, Rgb c) {
    if (x >= 0 && y >= 0 && x < w_ && y < h_) px_[static_cast<std::size_t>(y * w_ + x)] = c;
  }
  void fill(int x, int y, int w, int h, Rgb c) {
    for (int j = y; j < y + h; ++j)
      for (int i = x; i < x + w; ++i) set(i, j, c);
  }
  void frame(int x, int y, int w, int h, int thickness, Rgb c) {
    fill(x, y, w, thickness, c), fill(x, y + h - thickness, w, thickness, c);
    fill(x, y, thickness, h, c), fill(x + w - thickness, y, thickness, h, c);
  }
  /// Draws `text` with its top-left corner at (x, y), each font pixel `scale` pixels wide.
  void text(int x, int y, std::string_view text, Rgb c, int scale = 1) {
    for (char ch : text) {
      const auto& rows = glyph(ch);
      for (int r = 0; r < 7; ++r)
        for (int col = 0; col < 5; ++col)
          if (rows[static_cast<std::size_t>(r)] & (0x10 >> col)) fill(x + col * scale, y + r * scale, scale, scale, c);
      x += 6 * scale;
    }
  }
  static int text_width(std::string_view text, int scale = 1) {
    return static_cast<int>(text.size()) * 6 * scale - scale;
  }
  const std::vector<Rgb>& pixels() const { return px_; }

 private:
  // Rows of 5 bits, top to bottom: the digits and the letters the pictures' labels use.
  static const std::array<std::uint8_t, 7>& glyph(char ch) {
    static constexpr std::string_view kChars = "0123456789PREDICTU: ";
    static constexpr std::array<std::array<std::uint8_t, 7>, 20> kGlyphs = {{
        {0x0E, 0x11, 0x13, 0x15, 0x19, 0x11, 0x0E}, {0x04, 0x0C, 0x04, 0x04, 0x04, 0x04, 0x0E},
        {0x0E, 0x11, 0x01, 0x02, 0x04, 0x08, 0x1F}, {0x1F, 0x02, 0x04, 0x02, 0x01, 0x11, 0x0E},
        {0x02, 0x06, 0x0A, 0x12, 0x1F, 0x02, 0x02}, {0x1F, 0x10, 0x1E, 0x01, 0x01, 0x11, 0x0E},
        {0x06, 0x08, 0x10, 0x1E, 0x11, 0x11, 0x0E}, {0x1F, 0x01, 0x02, 0x04, 0x08, 0x08, 0x08},
        {0x0E, 0x11, 0x11, 0x0E, 0x11, 0x11, 0x0E}, {0x0E, 0x11, 0x11, 0x0F, 0x01, 0x02, 0x0C},
        {0x1E, 0x11, 0x11, 0x1E, 0x10, 0x10, 0x10}, {0x1E, 0x11, 0x11, 0x1E, 0x14, 0x12, 0x11},
        {0x1F, 0x10, 0x10, 0x1E, 0x10, 0x10, 0x1F}, {0x1C, 0x12, 0x11, 0x11, 0x11, 0x12, 0x1C},
        {0x0E, 0x04, 0x04, 0x04, 0x04, 0x04, 0x0E}, {0x0E, 0x11, 0x10, 0x10, 0x10, 0x11, 0x0E},
        {0x1F, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04}, {0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0E},
        {0x00, 0x0C, 0x0C, 0x00, 0x0C, 0x0C, 0x00}, {0, 0, 0, 0, 0, 0, 0},
    }};
    const std::size_t i = kChars.find(ch);
    return kGlyphs[i == std::string_view::npos ? kChars.size() - 1 : i];
  }

  int w_, h_;
  std::vector<Rgb> px_;
};

namespace detail {

inline void append_png_bytes(png_structp png, png_bytep data, png_size_t n) {
  auto* out = static_cast<std::vector<std::byte>*>(png_get_io_ptr(png));
  const auto* p = reinterpret_cast<const std::byte*>(data);
  out->insert(out->end(), p, p + n);
}
inline void no_flush(png_structp) {}

/// The PNG encoding of `rows` (RGB, 8 bits), or false when libpng reports an error. Only
/// plain data lives in this frame, which libpng may leave by longjmp.
inline bool encode_png(int width, int height, png_bytepp rows, std::vector<std::byte>* out) {
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  if (png == nullptr) return false;
  png_infop info = png_create_info_struct(png);
  if (info == nullptr || setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    return false;
  }
  png_set_write_fn(png, out, append_png_bytes, no_flush);
  png_set_IHDR(png, info, static_cast<png_uint_32>(width), static_cast<png_uint_32>(height), 8, PNG_COLOR_TYPE_RGB,
               PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_write_info(png, info);
  png_write_image(png, rows);
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  return true;
}

}  // namespace detail

/// Writes `canvas` to `path` as a PNG, atomically. Throws tinynet::FileError on failure.
inline void write_png(const Canvas& canvas, const std::filesystem::path& path) {
  std::vector<png_bytep> rows(static_cast<std::size_t>(canvas.height()));
  auto* base = reinterpret_cast<png_bytep>(const_cast<Rgb*>(canvas.pixels().data()));  // libpng only reads them
  for (int y = 0; y < canvas.height(); ++y) rows[static_cast<std::size_t>(y)] = base + 3 * y * canvas.width();
  std::vector<std::byte> bytes;
  if (!detail::encode_png(canvas.width(), canvas.height(), rows.data(), &bytes))
    throw tinynet::FileError("libpng could not encode " + path.string());
  tinynet::io::detail::write_file_atomic(path, bytes, "write_png");
}

/// Layout of the predictions grid: cells of kCell x kCellHeight pixels, kColumns wide.
inline constexpr int kColumns = 10, kCell = 64, kCellHeight = 78, kDigitScale = 2;

/// The first `count` images of `images` ([N, 1, 28, 28], any scaling: each is stretched to
/// black..white) in a grid, each with "P:<predicted> T:<true>"; misclassified ones are
/// framed in red and labelled in red.
inline Canvas predictions_grid(const tinynet::Tensor& images, const std::vector<std::int64_t>& predicted,
                               const std::vector<std::int64_t>& truth, int count) {
  const tinynet::Tensor x = images.to(tinynet::DType::float32);
  const int side = static_cast<int>(x.size(2));
  const int rows = (count + kColumns - 1) / kColumns;
  Canvas c(kColumns * kCell, rows * kCellHeight, kWhite);
  for (int n = 0; n < count; ++n) {
    const int cx = (n % kColumns) * kCell, cy = (n / kColumns) * kCellHeight;
    const float* img = x.data<float>() + static_cast<std::ptrdiff_t>(n) * side * side;
    const auto [lo, hi] = std::minmax_element(img, img + side * side);
    const float range = *hi > *lo ? *hi - *lo : 1.0f;
    for (int y = 0; y < side; ++y)
      for (int i = 0; i < side; ++i) {
        const auto v = static_cast<std::uint8_t>(std::lround(255.0f * (img[y * side + i] - *lo) / range));
        c.fill(cx + 4 + i * kDigitScale, cy + 4 + y * kDigitScale, kDigitScale, kDigitScale, {v, v, v});
      }
    const bool wrong = predicted[static_cast<std::size_t>(n)] != truth[static_cast<std::size_t>(n)];
    const std::string label = "P:" + std::to_string(predicted[static_cast<std::size_t>(n)]) +
                              " T:" + std::to_string(truth[static_cast<std::size_t>(n)]);
    c.text(cx + (kCell - Canvas::text_width(label)) / 2, cy + 8 + side * kDigitScale, label, wrong ? kRed : kBlack);
    if (wrong) c.frame(cx, cy, kCell, kCellHeight, 3, kRed);
  }
  return c;
}

/// Layout of the confusion matrix: square cells after a margin for the labels.
inline constexpr int kMatrixCell = 44, kMatrixLeft = 56, kMatrixTop = 48;

/// The colour of a cell holding `fraction` of its true class: white (0) to dark blue (1),
/// on a square-root scale so that rare confusions still show.
inline Rgb matrix_colour(double fraction) {
  const double t = std::sqrt(std::clamp(fraction, 0.0, 1.0));
  const auto mix = [&](double dark) { return static_cast<std::uint8_t>(std::lround(255.0 * (1 - t) + dark * t)); };
  return {mix(8), mix(48), mix(107)};
}

/// The confusion matrix of `classes` classes: row = true class, column = predicted class,
/// each cell coloured by its share of the row and labelled with its count.
inline Canvas confusion_matrix(const std::vector<std::int64_t>& predicted, const std::vector<std::int64_t>& truth,
                               int classes) {
  std::vector<std::int64_t> counts(static_cast<std::size_t>(classes * classes), 0), totals(classes, 0);
  for (std::size_t i = 0; i < predicted.size(); ++i) {
    ++counts[static_cast<std::size_t>(truth[i] * classes + predicted[i])];
    ++totals[static_cast<std::size_t>(truth[i])];
  }
  Canvas c(kMatrixLeft + classes * kMatrixCell + 8, kMatrixTop + classes * kMatrixCell + 8, kWhite);
  c.text(kMatrixLeft + (classes * kMatrixCell - Canvas::text_width("PREDICTED", 2)) / 2, 4, "PREDICTED", kBlack, 2);
  for (int k = 0; k < 4; ++k)  // "TRUE", one letter under the other, beside the rows
    c.text(6, kMatrixTop + (classes * kMatrixCell) / 2 - 34 + k * 18, std::string(1, "TRUE"[k]), kBlack, 2);
  for (int k = 0; k < classes; ++k) {
    const std::string d = std::to_string(k);
    c.text(kMatrixLeft + k * kMatrixCell + (kMatrixCell - Canvas::text_width(d)) / 2, kMatrixTop - 12, d, kGray);
    c.text(kMatrixLeft - 12, kMatrixTop + k * kMatrixCell + (kMatrixCell - 7) / 2, d, kGray);
  }
  for (int t = 0; t < classes; ++t)
    for (int p = 0; p < classes; ++p) {
      const std::int64_t n = counts[static_cast<std::size_t>(t * classes + p)];
      const double fraction = totals[t] ? static_cast<double>(n) / static_cast<double>(totals[t]) : 0.0;
      const int x = kMatrixLeft + p * kMatrixCell, y = kMatrixTop + t * kMatrixCell;
      c.fill(x, y, kMatrixCell, kMatrixCell, matrix_colour(fraction));
      c.frame(x, y, kMatrixCell, kMatrixCell, 1, {220, 220, 220});
      if (n == 0) continue;
      const std::string s = std::to_string(n);
      c.text(x + (kMatrixCell - Canvas::text_width(s)) / 2, y + (kMatrixCell - 7) / 2, s,
             fraction > 0.25 ? kWhite : kBlack);
    }
  return c;
}

}  // namespace mnist
