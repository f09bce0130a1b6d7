// dfopt_dataflow.h -- concurrent dataflow regions for dfopt's HLS software simulation.
//
// A generated top function reads, under both g++ and Vitis:
//
//   void top(hls::stream<float>& in, hls::stream<float>& out) {
//   #pragma HLS dataflow
//     DFOPT_DATAFLOW_BEGIN("top");
//     hls::stream<float> s0("s0");
//   #pragma HLS stream variable=s0 depth=4
//     DFOPT_STREAM_DEPTH(s0, 4);
//     DFOPT_PROCESS(load(in, s0));
//     DFOPT_PROCESS(store(s0, out));
//     DFOPT_DATAFLOW_END();
//   }
//
// Two builds of the same source:
// * `make csim` (g++ -std=c++14 -DDFOPT_THREADED_CSIM): streams come from dfopt_stream.h and
//   DFOPT_DATAFLOW_END() starts one thread per DFOPT_PROCESS call, waits for all of them, and then
//   requires every FIFO of the region to be empty. A deadlock (every live process blocked on a
//   stream) ends the program with exit code 3, tokens left in a FIFO of the region with exit
//   code 4, an exception escaping a process or a misuse of these macros with exit code 5; the
//   message goes to stderr.
// * every other build -- Vitis HLS (__SYNTHESIS__), Vitis csim, or g++ against AMD's csim model
//   of hls_stream.h (`make csim-vitis`): streams come from Vitis's <hls_stream.h> and the macros
//   expand to the plain calls `load(in, s0); store(s0, out);` in the order they are written (the
//   canonical dataflow form: producers before consumers), DFOPT_STREAM_DEPTH to nothing.
//
// Without macros: dfopt::dataflow("top", {{"load", [&] { load(in, s0); }}, ...}).
// Regions may follow one another and may nest (a process that runs a region).

#ifndef DFOPT_DATAFLOW_H
#define DFOPT_DATAFLOW_H

#if defined(DFOPT_THREADED_CSIM) && !defined(__SYNTHESIS__)
#include "dfopt_stream.h"
#else
#include <hls_stream.h>
#endif

#if !defined(DFOPT_HLS_STREAM_SIM)

// -- Vitis: the canonical sequential form of a dataflow region ---------------------------------
#define DFOPT_DATAFLOW_BEGIN(name)
#define DFOPT_PROCESS(...) __VA_ARGS__
#define DFOPT_DATAFLOW_END()
#ifndef DFOPT_STREAM_DEPTH
#define DFOPT_STREAM_DEPTH(s, n)
#endif

#ifndef __SYNTHESIS__
#include <functional>
#include <string>
#include <utility>
#include <vector>
namespace dfopt {
struct Process {
  std::string name;
  std::function<void()> body;
  template <class F>
  Process(F&& f) : body(std::forward<F>(f)) {}
  template <class F>
  Process(std::string n, F&& f) : name(std::move(n)), body(std::forward<F>(f)) {}
};
// Vitis csim semantics: the processes run one after the other.
inline void dataflow(const std::string&, std::vector<Process> procs) {
  for (auto& p : procs) p.body();
}
}  // namespace dfopt
#endif

#else

// -- g++ software simulation: concurrent processes, bounded FIFOs -------------------------------
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <system_error>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "dfopt_monitor.h"

namespace dfopt {

// One process of dfopt::dataflow: a callable, optionally named (default: p0, p1, ...).
struct Process {
  std::string name;
  std::function<void()> body;
  template <class F, class = decltype(std::declval<F&>()())>
  Process(F&& f) : body(std::forward<F>(f)) {}
  template <class F>
  Process(std::string n, F&& f) : name(std::move(n)), body(std::forward<F>(f)) {}
};

namespace detail {

// "ns::load(in, s0)" -> "ns::load"
inline std::string call_name(const char* call) {
  std::string s(call);
  s = s.substr(0, s.find('('));
  std::size_t b = s.find_first_not_of(" \t\n");
  std::size_t e = s.find_last_not_of(" \t\n");
  return b == std::string::npos ? std::string("process") : s.substr(b, e - b + 1);
}

inline void add_process(Region& r, std::string name, std::function<void()> body) {
  if (r.started) {
    fatal(exit_code::misuse, "ERROR in dataflow " + r.name + ": process " + name +
                                 " added after the region started\n");
  }
  int same = 0;
  for (const auto& p : r.procs) same += p->name == name || p->name.rfind(name + "#", 0) == 0;
  auto p = std::make_unique<Proc>();
  p->id = monitor().new_id();
  p->name = same ? name + "#" + std::to_string(same + 1) : name;
  p->region = &r;
  p->body = std::move(body);
  r.procs.push_back(std::move(p));
}

inline void run_process(Proc& p) {
  tl_proc() = &p;
  try {
    p.body();
  } catch (const std::exception& e) {
    fatal(exit_code::misuse, "ERROR in dataflow " + p.region->name + ": process " + p.name +
                                 " threw: " + e.what() + "\n");
  } catch (...) {
    fatal(exit_code::misuse, "ERROR in dataflow " + p.region->name + ": process " + p.name +
                                 " threw an exception\n");
  }
  monitor().process_exit(p);
  tl_proc() = nullptr;
}

// Starts every process of `r` in its own thread, waits for all, checks the FIFOs are empty.
inline void run_region(Region& r) {
  Monitor& m = monitor();
  m.start_region(r);
  std::vector<std::thread> threads;
  threads.reserve(r.procs.size());
  for (auto& p : r.procs) {
    Proc* proc = p.get();
    try {
      threads.emplace_back([proc] { run_process(*proc); });
    } catch (const std::system_error& e) {
      fatal(exit_code::misuse, "ERROR in dataflow " + r.name + ": cannot start a thread for " +
                                   "process " + proc->name + ": " + e.what() + "\n");
    }
  }
  m.join_region(r);
  for (auto& t : threads) t.join();
  m.end_region(r);
}

inline Region& open_region(const char* what) {
  if (tl_open().empty()) {
    fatal(exit_code::misuse, std::string("ERROR: ") + what +
                                 " outside DFOPT_DATAFLOW_BEGIN(...) ... DFOPT_DATAFLOW_END()\n");
  }
  return *tl_open().back();
}

// DFOPT_DATAFLOW_BEGIN: opens a region on this thread until DFOPT_DATAFLOW_END runs it.
class RegionScope {
 public:
  explicit RegionScope(const char* name) {
    region_.id = monitor().new_id();
    region_.name = name;
    tl_open().push_back(&region_);
  }
  RegionScope(const RegionScope&) = delete;
  RegionScope& operator=(const RegionScope&) = delete;
  ~RegionScope() {
    if (region_.started) return;
    if (!tl_open().empty() && tl_open().back() == &region_) tl_open().pop_back();
    if (!std::uncaught_exception()) {
      fatal(exit_code::misuse, "ERROR: DFOPT_DATAFLOW_BEGIN(\"" + region_.name +
                                   "\") without DFOPT_DATAFLOW_END()\n");
    }
  }

 private:
  Region region_;
};

inline void add_call(const char* call, std::function<void()> body) {
  add_process(open_region("DFOPT_PROCESS"), call_name(call), std::move(body));
}

inline void end_open_region() {
  Region& r = open_region("DFOPT_DATAFLOW_END()");
  tl_open().pop_back();
  run_region(r);
}

}  // namespace detail

// Runs `procs` as one dataflow region named `name`: concurrently, each in its own thread.
// Declare the region's streams before the call and bound them with DFOPT_STREAM_DEPTH.
inline void dataflow(const std::string& name, std::vector<Process> procs) {
  detail::Region r;
  r.id = detail::monitor().new_id();
  r.name = name;
  for (std::size_t i = 0; i < procs.size(); ++i) {
    std::string pname = procs[i].name.empty() ? "p" + std::to_string(i) : procs[i].name;
    detail::add_process(r, pname, std::move(procs[i].body));
  }
  detail::run_region(r);
}

}  // namespace dfopt

#define DFOPT_CAT_(a, b) a##b
#define DFOPT_CAT(a, b) DFOPT_CAT_(a, b)
#define DFOPT_DATAFLOW_BEGIN(name) \
  ::dfopt::detail::RegionScope DFOPT_CAT(dfopt_region_, __LINE__)(name)
#define DFOPT_PROCESS(...) ::dfopt::detail::add_call(#__VA_ARGS__, [&]() { __VA_ARGS__; })
#define DFOPT_DATAFLOW_END() ::dfopt::detail::end_open_region()

#endif
#endif  // DFOPT_DATAFLOW_H
