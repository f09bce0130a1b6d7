// A generated-style dataflow top with its testbench, using only what Vitis's own hls::stream
// has. tests/test_hls_runtime.py builds it against dfopt's headers (concurrent, bounded FIFOs)
// and against AMD's csim model of hls_stream.h (the macros become plain sequential calls).
#include <cstdio>

#include "dfopt_dataflow.h"

static const int N = 64;

void load(hls::stream<float>& in, hls::stream<float>& out) {
  for (int i = 0; i < N; ++i) out.write(in.read());
}
void square(hls::stream<float>& in, hls::stream<float>& out) {
  for (int i = 0; i < N; ++i) {
    float v = in.read();
    out.write(v * v);
  }
}
void store(hls::stream<float>& in, hls::stream<float>& out) {
  for (int i = 0; i < N; ++i) out.write(in.read() + 0.5f);
}

void top(hls::stream<float>& in, hls::stream<float>& out) {
#pragma HLS dataflow
  DFOPT_DATAFLOW_BEGIN("top");
  hls::stream<float> s0("s0");
#pragma HLS stream variable=s0 depth=2
  DFOPT_STREAM_DEPTH(s0, 2);
  hls::stream<float> s1("s1");
#pragma HLS stream variable=s1 depth=3
  DFOPT_STREAM_DEPTH(s1, 3);
  DFOPT_PROCESS(load(in, s0));
  DFOPT_PROCESS(square(s0, s1));
  DFOPT_PROCESS(store(s1, out));
  DFOPT_DATAFLOW_END();
}

#ifndef __SYNTHESIS__
int main() {
  hls::stream<float> in("in"), out("out");
  for (int i = 0; i < N; ++i) in.write(static_cast<float>(i));
  top(in, out);
  int bad = 0;
  for (int i = 0; i < N; ++i) bad += out.read() != static_cast<float>(i * i) + 0.5f;
  std::printf("bad=%d\n", bad);
  return bad != 0;
}
#endif
