// A stand-in for Vitis HLS's own hls_stream.h in csim: an unbounded FIFO, no threads.
// tests/test_hls_runtime.py builds against it to check that dfopt_dataflow.h falls back to the
// plain sequential calls when dfopt's hls_stream.h is not the one on the include path.
#ifndef FAKE_VITIS_HLS_STREAM_H
#define FAKE_VITIS_HLS_STREAM_H
#include <cstddef>
#include <deque>
#include <string>

namespace hls {
template <typename T>
class stream {
 public:
  stream() {}
  explicit stream(const char* name) : name_(name) {}
  T read() {
    T v = q_.front();
    q_.pop_front();
    return v;
  }
  void read(T& v) { v = read(); }
  void write(const T& v) { q_.push_back(v); }
  void operator>>(T& v) { read(v); }
  void operator<<(const T& v) { write(v); }
  bool empty() const { return q_.empty(); }
  std::size_t size() const { return q_.size(); }

 private:
  std::string name_;
  std::deque<T> q_;
};
}  // namespace hls
#endif
