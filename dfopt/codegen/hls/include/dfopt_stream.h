// dfopt_stream.h -- dfopt's threaded hls::stream for software simulation with g++.
//
// Source-compatible with the subset of Vitis HLS's hls::stream that dfopt generates:
//   hls::stream<T> s;  hls::stream<T> s("name");  hls::stream<T, DEPTH> s;
//   s.read()  s.read(v)  s >> v  s.write(v)  s << v  s.read_nb(v)  s.write_nb(v)
//   s.empty()  s.full()  s.size()
// Unlike Vitis csim (unbounded FIFOs, processes run one after the other), a stream here is a
// bounded FIFO shared by concurrent threads: read() blocks while it is empty, write() blocks
// while it holds `depth` tokens. dfopt_dataflow.h runs the processes; dfopt_monitor.h turns a
// wait that can never end into a deadlock report (exit code 3).
//
// Depth: DFOPT_STREAM_DEPTH(s, n) or dfopt::set_depth(s, n) (next to `#pragma HLS stream
// variable=s depth=n`, which g++ ignores), or the DEPTH template argument. Without one, a stream
// declared inside a dataflow region (after DFOPT_DATAFLOW_BEGIN, or in a process) has depth 2,
// the Vitis default; a stream declared anywhere else -- the testbench's, bound to the top
// function's stream arguments -- is unbounded, as the testbench side of a top-level stream is.
//
// The header is named so that it never shadows Vitis's own hls_stream.h: generated code includes
// dfopt_dataflow.h, which includes this one only in a build with -DDFOPT_THREADED_CSIM (`make
// csim`) and Vitis's <hls_stream.h> otherwise (`make csim-vitis`, Vitis HLS). C++14:
// g++ -std=c++14 -pthread -DDFOPT_THREADED_CSIM -I<this folder>.

#ifndef DFOPT_STREAM_H
#define DFOPT_STREAM_H

#ifdef __SYNTHESIS__
#error "dfopt_stream.h is dfopt's software model of hls::stream; synthesis uses Vitis's hls_stream.h"
#endif

#define DFOPT_HLS_STREAM_SIM 1

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "dfopt_monitor.h"

// Times a blocked read or write yields before it sleeps on a condition variable.
#ifndef DFOPT_SPIN
#define DFOPT_SPIN 8
#endif

namespace dfopt {
namespace detail {

// The synchronisation of one FIFO, independent of the token type.
class StreamCore {
 public:
  explicit StreamCore(std::string name, std::size_t depth) {
    Monitor& m = monitor();
    id_ = m.new_id();
    name_ = name.empty() ? "stream" + std::to_string(id_) : std::move(name);
    std::uint64_t owner = m.add_stream(id_, &name_, &count_);
    cap_ = depth > 0 ? depth : (owner != 0 ? 2 : 0);
  }
  StreamCore(const StreamCore&) = delete;
  StreamCore& operator=(const StreamCore&) = delete;
  ~StreamCore() { monitor().remove_stream(id_); }

  const std::string& name() const { return name_; }

  // Capacity in tokens; 0 means unbounded.
  std::size_t depth() const {
    std::lock_guard<std::mutex> lk(mu_);
    return cap_;
  }

  void set_depth(long long n) {
    if (n < 1) {
      fatal(exit_code::misuse, "ERROR: depth of stream " + name_ + " must be at least 1, got " +
                                   std::to_string(n) + "\n");
    }
    std::lock_guard<std::mutex> lk(mu_);
    cap_ = static_cast<std::size_t>(n);
    if (count_ < cap_ && !writers_.empty()) wake(writers_);
  }

  std::size_t size() const { return count_.load(); }
  bool empty() const { return count_.load() == 0; }
  bool full() const {
    std::lock_guard<std::mutex> lk(mu_);
    return is_full();
  }

 protected:
  mutable std::mutex mu_;

  bool is_full() const { return cap_ != 0 && count_ >= cap_; }

  // All below: called with mu_ held through `lk`.
  void note(bool write) {
    std::uint64_t me = tl_proc() ? tl_proc()->id : 0;
    std::uint64_t& last = write ? last_writer_ : last_reader_;
    if (last != me) {
      last = me;
      monitor().note_access(id_, write);
    }
  }

  void wait_readable(std::unique_lock<std::mutex>& lk) {
    for (int i = 0; count_ == 0 && i < DFOPT_SPIN; ++i) yield(lk);
    while (count_ == 0) wait(lk, readers_, false);
  }

  void wait_writable(std::unique_lock<std::mutex>& lk) {
    for (int i = 0; is_full() && i < DFOPT_SPIN; ++i) yield(lk);
    while (is_full()) wait(lk, writers_, true);
  }

  void pushed() {
    ++written_;
    ++count_;
    if (!readers_.empty()) wake(readers_);
  }

  void popped() {
    ++read_;
    --count_;
    if (!writers_.empty()) wake(writers_);
  }

 private:
  std::string name_;
  std::uint64_t id_ = 0;
  std::size_t cap_ = 0;
  std::atomic<std::size_t> count_{0};
  std::uint64_t written_ = 0, read_ = 0;  // tokens so far
  std::uint64_t last_writer_ = UINT64_MAX, last_reader_ = UINT64_MAX;
  std::vector<Waiter*> readers_, writers_;
  std::condition_variable cv_;

  void wait(std::unique_lock<std::mutex>& lk, std::vector<Waiter*>& queue, bool write) {
    Waiter w;
    w.proc = tl_proc();
    w.write = write;
    w.stream = &name_;
    w.depth = cap_;
    w.token = write ? written_ : read_;
    queue.push_back(&w);
    monitor().block(w);  // may report a deadlock and end the program
    cv_.wait(lk, [&] { return w.woken; });
  }

  // Lets the other end run before going to sleep: far fewer futex round trips at depth 2.
  static void yield(std::unique_lock<std::mutex>& lk) {
    lk.unlock();
    std::this_thread::yield();
    lk.lock();
  }

  void wake(std::vector<Waiter*>& queue) {
    monitor().wake(queue);
    cv_.notify_all();
  }
};

}  // namespace detail
}  // namespace dfopt

namespace hls {

template <typename T, int DEPTH = 0>
class stream;

template <typename T>
class stream<T, 0> : public dfopt::detail::StreamCore {
 public:
  stream() : StreamCore("", 0) {}
  explicit stream(const char* name) : StreamCore(name ? name : "", 0) {}
  explicit stream(const std::string& name) : StreamCore(name, 0) {}

  T read() {
    std::unique_lock<std::mutex> lk(mu_);
    note(false);
    wait_readable(lk);
    T v = std::move(q_.front());
    q_.pop_front();
    popped();
    return v;
  }
  void read(T& v) { v = read(); }

  void write(const T& v) {
    std::unique_lock<std::mutex> lk(mu_);
    note(true);
    wait_writable(lk);
    q_.push_back(v);
    pushed();
  }

  bool read_nb(T& v) {
    std::unique_lock<std::mutex> lk(mu_);
    note(false);
    if (q_.empty()) return false;
    v = std::move(q_.front());
    q_.pop_front();
    popped();
    return true;
  }

  bool write_nb(const T& v) {
    std::unique_lock<std::mutex> lk(mu_);
    note(true);
    if (is_full()) return false;
    q_.push_back(v);
    pushed();
    return true;
  }

  void operator>>(T& v) { read(v); }
  void operator<<(const T& v) { write(v); }

 protected:
  stream(const char* name, std::size_t depth) : StreamCore(name ? name : "", depth) {}

 private:
  std::deque<T> q_;
};

// hls::stream<T, DEPTH>: the depth as a template argument (Vitis 2020.1 and later).
template <typename T, int DEPTH>
class stream : public stream<T, 0> {
  static_assert(DEPTH > 0, "hls::stream depth must be positive");

 public:
  stream() : stream<T, 0>(nullptr, DEPTH) {}
  explicit stream(const char* name) : stream<T, 0>(name, DEPTH) {}
};

}  // namespace hls

namespace dfopt {

// Bounds `s` to n tokens (n >= 1); the simulation twin of `#pragma HLS stream depth=n`.
inline void set_depth(detail::StreamCore& s, long long n) { s.set_depth(n); }

// Capacity of `s` in tokens; 0 means unbounded (a testbench stream).
inline std::size_t depth(const detail::StreamCore& s) { return s.depth(); }

}  // namespace dfopt

#ifndef DFOPT_STREAM_DEPTH
#define DFOPT_STREAM_DEPTH(s, n) ::dfopt::set_depth((s), (n))
#endif

#endif  // DFOPT_STREAM_H
