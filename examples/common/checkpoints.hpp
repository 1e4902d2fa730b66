#pragma once
// Resuming from a checkpoint and stopping at a signal, as every training example does
// them: a checkpoint holds the model, the optimizer, the scheduler, the generator and
// where the run stands (epochs done, batches done of the next).

#include <signal.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <tinynet/io/io.hpp>
#include <tinynet/tinynet.hpp>

#include "distributed.hpp"
#include "flags.hpp"
#include "stop.hpp"

namespace job {

/// --resume: loads `checkpoint` into the model, optimizer, scheduler and generator, and
/// says where the run goes on from. A
/// checkpoint another configuration wrote (Adadelta's state where SGD needs a momentum)
/// is a StateDictError (exit code 4) saying so, like a model that does not fit;
/// `configuration` names the flags that decide its contents ("--model net, --optimizer sgd").
template <class Model, class Optimizer, class Scheduler>
tinynet::TrainingProgress resume(const std::filesystem::path& checkpoint, const std::string& configuration,
                                 Model& model, Optimizer& optimizer, Scheduler& scheduler) {
  tinynet::TrainingProgress done;
  try {
    done = tinynet::load_checkpoint(checkpoint, model, optimizer, scheduler, tinynet::default_generator());
  } catch (const tinynet::FileError&) {
    throw;
  } catch (const tinynet::FormatError&) {
    throw;
  } catch (const tinynet::StateDictError&) {
    throw;
  } catch (const tinynet::Error& e) {
    throw tinynet::StateDictError("--resume: '" + checkpoint.string() + "' does not fit this run (" + configuration +
                                  "): " + e.what() +
                                  "; resume with the flags that wrote it, or give a fresh --checkpoint-dir");
  }
  std::fprintf(stderr, "Resumed from %s after epoch %lld", checkpoint.c_str(), static_cast<long long>(done.epoch));
  if (done.step > 0)
    std::fprintf(stderr, " and %lld batches of epoch %lld", static_cast<long long>(done.step),
                 static_cast<long long>(done.epoch + 1));
  std::fprintf(stderr, "\n");
  return done;
}

/// A signal stopped training at a batch boundary: rank 0 writes where the run stands
/// (`progress`: epochs done, batches done of the next) to the checkpoint, when there is
/// one; every rank waits for the others, then the process exits 128 + the signal.
template <class Model, class Optimizer, class Scheduler>
int stop_training(const JobOptions& o, const Distributed& dist, int sig, tinynet::TrainingProgress progress,
                  const std::filesystem::path& checkpoint, Model& model, Optimizer& optimizer, Scheduler& scheduler) {
  std::fprintf(stderr, "%sStopped by %s after epoch %lld and %lld batches of epoch %lld\n", dist.prefix().c_str(),
               sig == SIGTERM ? "SIGTERM" : "SIGINT", static_cast<long long>(progress.epoch),
               static_cast<long long>(progress.step), static_cast<long long>(progress.epoch + 1));
  if (!checkpoint.empty() && dist.is_main()) {
    tinynet::save_checkpoint(checkpoint, model, optimizer, scheduler, tinynet::default_generator(), progress);
    std::fprintf(stderr, "Wrote the checkpoint %s: run again with --resume to go on from there\n", checkpoint.c_str());
  } else if (!o.checkpoint_dir.empty() || dist.is_main()) {
    std::fprintf(
        stderr, "%s\n",
        dist.is_main() ? "No --checkpoint-dir: this run's progress is not kept" : "Rank 0 writes the checkpoint");
  }
  finish_distributed(dist);
  return exit_code_for_signal(sig);
}

}  // namespace job
