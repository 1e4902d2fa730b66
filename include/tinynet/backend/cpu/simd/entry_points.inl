/// \file
/// The entry points of one vector level's kernels (simd/kernels.inl defines them): what the
/// family headers (backend/cpu/conv2d.hpp, ...) call with the level's `Level` tag, and what
/// tinynet::cpu_kernels instantiates (TINYNET_CPU_KERNELS, kernels_for_isa.hpp). Where a
/// translation unit cannot compile the sources (nvcc), these declarations are all it has
/// of the levels above the baseline, and it calls the library's instantiations; a
/// declaration that drifted from its definition would leave it an undefined reference
/// (CI links cuda_tests and mnist_cuda so).

template <typename T>
bool uses_winograd(Level, const Conv2dGeometry& g);
template <typename T>
bool uses_one_channel(Level, const Conv2dGeometry& g);
template <typename T>
bool conv2d_takes_bf16(Level, const Conv2dGeometry& g, bool input);
template <typename T, typename X, typename Y>
void conv2d_forward(Level, const Conv2dGeometry& g, const X* x, const T* w, const T* b, Y* y, T* scratch, bool relu,
                    Products products);
template <typename T, typename X, typename Y>
void conv2d_backward(Level, const Conv2dGeometry& g, const X* x, const T* w, const Y* gy, X* dx, bool acc_dx, T* dw,
                     bool acc_dw, T* db, bool acc_db, T* scratch, const Y* y_relu, Products products);
template <typename T>
void dropout_mask(Level, const RandomStream& rs, T* mask, std::int64_t units, double p);
template <typename T>
void apply_mask(Level, const T* x, const float* mask, T* y, std::int64_t n, bool accumulate);
template <typename T>
void linear_forward(Level, const T* x, const T* w, const T* b, T* y, std::int64_t batch, std::int64_t in,
                    std::int64_t out, Products products);
template <typename T>
void linear_forward(Level, const bfloat16* x, const T* w, const T* b, bfloat16* y, std::int64_t batch, std::int64_t in,
                    std::int64_t out);
template <typename T>
void linear_backward_input(Level, const T* gy, const T* w, T* dx, std::int64_t batch, std::int64_t in, std::int64_t out,
                           bool accumulate, Products products);
template <typename T>
void linear_backward_input(Level, const bfloat16* gy, const T* w, bfloat16* dx, std::int64_t batch, std::int64_t in,
                           std::int64_t out, bool accumulate);
template <typename T>
void linear_backward_weight(Level, const T* gy, const T* x, T* dw, std::int64_t batch, std::int64_t in,
                            std::int64_t out, bool accumulate, Products products);
template <typename T>
void linear_backward_weight(Level, const bfloat16* gy, const bfloat16* x, T* dw, std::int64_t batch, std::int64_t in,
                            std::int64_t out, bool accumulate);
template <typename T>
void sgd_update(Level, T* param, const T* grad, T* buf, std::int64_t n, const SgdArgs& a);
template <typename T>
void adadelta_update(Level, T* param, const T* grad, T* square_avg, T* acc_delta, std::int64_t n,
                     const AdadeltaArgs& a);
template <typename T>
void max_pool2d_forward(Level, const Pool2dGeometry& g, const T* x, T* y, std::int32_t* idx);
template <typename X, typename T>
void batch_norm_train_stats(Level, const BatchNormGeometry& g, const X* x, T* mean, T* var, T* invstd, T* running_mean,
                            T* running_var, double momentum, double eps);
template <typename X, typename T>
void batch_norm_apply(Level, const BatchNormGeometry& g, const X* x, const T* mean, const T* invstd, const T* w,
                      const T* b, T* y, bool relu);
template <typename X, typename T>
void batch_norm_backward(Level, const BatchNormGeometry& g, const X* x, const T* mean, const T* invstd, const T* w,
                         const T* gy, const T* y_relu, bool training, X* dx, bool acc_dx, T* dw, bool acc_dw, T* db,
                         bool acc_db, double* sums);
