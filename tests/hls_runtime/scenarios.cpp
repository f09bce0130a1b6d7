// Scenarios for tests/test_hls_runtime.py, written the way dfopt's HLS generator writes a
// dataflow top. Usage: scenarios <name> [depth]; prints results to stdout, exit 0 when they
// match. The runtime itself ends a deadlock with exit 3, leftover tokens with 4, misuse with 5.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "dfopt_dataflow.h"

static int g_depth = 2;  // depth under test, from argv (a generator emits a constant)

// -- 1. producer -> scale -> consumer, depth-2 FIFOs --------------------------------------------
static const int PIPE_N = 1000;

void producer(hls::stream<int>& in, hls::stream<int>& out) {
  for (int i = 0; i < PIPE_N; ++i) out.write(in.read());
}
void scale(hls::stream<int>& in, hls::stream<int>& out) {
  for (int i = 0; i < PIPE_N; ++i) {
    int v;
    in >> v;
    out << 3 * v;
  }
}
void consumer(hls::stream<int>& in, hls::stream<int>& out) {
  for (int i = 0; i < PIPE_N; ++i) out.write(in.read() + 1);
}

void pipeline_top(hls::stream<int>& in, hls::stream<int>& out) {
#pragma HLS dataflow
  DFOPT_DATAFLOW_BEGIN("pipeline_top");
  hls::stream<int> s0("s0");
#pragma HLS stream variable=s0 depth=2
  DFOPT_STREAM_DEPTH(s0, 2);
  hls::stream<int> s1("s1");  // no depth given: the Vitis default, 2
  hls::stream<int, 5> unused("unused");  // depth as a template argument
  std::printf("depths s0=%zu s1=%zu unused=%zu in=%zu\n", dfopt::depth(s0), dfopt::depth(s1),
              dfopt::depth(unused), dfopt::depth(in));
  DFOPT_PROCESS(producer(in, s0));
  DFOPT_PROCESS(scale(s0, s1));
  DFOPT_PROCESS(consumer(s1, out));
  DFOPT_DATAFLOW_END();
}

static int check_pipeline(hls::stream<int>& out) {
  int bad = 0;
  for (int i = 0; i < PIPE_N; ++i) bad += out.read() != 3 * i + 1;
  std::printf("pipeline bad=%d left=%zu\n", bad, out.size());
  return bad != 0 || !out.empty();
}

int run_pipeline() {
  hls::stream<int> in("in"), out("out");
  for (int i = 0; i < PIPE_N; ++i) in.write(i);
  pipeline_top(in, out);
  return check_pipeline(out);
}

// the same pipeline through the function API
int run_pipeline_api() {
  hls::stream<int> in("in"), out("out"), s0("s0"), s1("s1");
  dfopt::set_depth(s0, 2);
  dfopt::set_depth(s1, 2);
  for (int i = 0; i < PIPE_N; ++i) in.write(i);
  dfopt::dataflow("pipeline_api", {{"producer", [&] { producer(in, s0); }},
                                   {"scale", [&] { scale(s0, s1); }},
                                   [&] { consumer(s1, out); }});
  return check_pipeline(out);
}

// -- 2. fork-join: A -> B -> D and A -> C -> D; D reads all of C before any of B --------------
// A writes token i to s_ab then to s_ac. While D drains s_cd, the B branch must hold all
// FORK_N tokens: s_ab (depth d) + the one B holds while blocked + s_bd (depth d) >= FORK_N.
static const int FORK_N = 9;  // completes for d >= 4, deadlocks for d <= 3

void fork_a(hls::stream<int>& ab, hls::stream<int>& ac) {
  for (int i = 0; i < FORK_N; ++i) {
    ab.write(i);
    ac.write(100 + i);
  }
}
void fork_b(hls::stream<int>& ab, hls::stream<int>& bd) {
  for (int i = 0; i < FORK_N; ++i) bd.write(ab.read() * 2);
}
void fork_c(hls::stream<int>& ac, hls::stream<int>& cd) {
  for (int i = 0; i < FORK_N; ++i) cd.write(ac.read() + 1);
}
void fork_d(hls::stream<int>& bd, hls::stream<int>& cd, hls::stream<long>& out) {
  long sum_c = 0, sum_b = 0;
  for (int i = 0; i < FORK_N; ++i) sum_c += cd.read();
  for (int i = 0; i < FORK_N; ++i) sum_b += bd.read();
  out.write(sum_b);
  out.write(sum_c);
}

void fork_top(hls::stream<long>& out) {
#pragma HLS dataflow
  DFOPT_DATAFLOW_BEGIN("fork_top");
  hls::stream<int> s_ab("s_ab"), s_ac("s_ac"), s_bd("s_bd"), s_cd("s_cd");
#pragma HLS stream variable=s_ab depth=4
#pragma HLS stream variable=s_bd depth=4
  DFOPT_STREAM_DEPTH(s_ab, g_depth);
  DFOPT_STREAM_DEPTH(s_bd, g_depth);
  DFOPT_PROCESS(fork_a(s_ab, s_ac));
  DFOPT_PROCESS(fork_b(s_ab, s_bd));
  DFOPT_PROCESS(fork_c(s_ac, s_cd));
  DFOPT_PROCESS(fork_d(s_bd, s_cd, out));
  DFOPT_DATAFLOW_END();
}

int run_fork() {
  hls::stream<long> out("out");
  fork_top(out);
  long sum_b = out.read(), sum_c = out.read();
  long want_b = 0, want_c = 0;
  for (int i = 0; i < FORK_N; ++i) {
    want_b += 2 * i;
    want_c += 101 + i;
  }
  std::printf("fork sum_b=%ld sum_c=%ld\n", sum_b, sum_c);
  return sum_b != want_b || sum_c != want_c;
}

// -- 3. leftover tokens: the producer writes 8, the consumer reads 3 ----------------------------
void write8(hls::stream<int>& s) {
  for (int i = 0; i < 8; ++i) s.write(i);
}
void read3(hls::stream<int>& s, hls::stream<int>& out) {
  for (int i = 0; i < 3; ++i) out.write(s.read());
}

int run_leftover() {
  hls::stream<int> out("out");
  {
    DFOPT_DATAFLOW_BEGIN("leftover_top");
    hls::stream<int> s("s");
    DFOPT_STREAM_DEPTH(s, g_depth);  // 8: the producer finishes, 5 tokens stay; 2: deadlock
    DFOPT_PROCESS(write8(s));
    DFOPT_PROCESS(read3(s, out));
    DFOPT_DATAFLOW_END();
  }
  std::printf("leftover not detected\n");
  return 1;
}

// the consumer wants more tokens than the producer writes: a deadlock once the producer ends
void write3(hls::stream<int>& s) {
  for (int i = 0; i < 3; ++i) s.write(i);
}
void read8(hls::stream<int>& s, hls::stream<int>& out) {
  for (int i = 0; i < 8; ++i) out.write(s.read());
}

int run_starved() {
  hls::stream<int> out("out");
  DFOPT_DATAFLOW_BEGIN("starved_top");
  hls::stream<int> s("s");
  DFOPT_PROCESS(write3(s));
  DFOPT_PROCESS(read8(s, out));
  DFOPT_DATAFLOW_END();
  return 1;
}

// -- 4. regions one after the other, nested regions ---------------------------------------------
static const int SEQ_N = 16;

void seq_src(hls::stream<int>& out) {
  for (int i = 0; i < SEQ_N; ++i) out.write(i);
}
void seq_add(hls::stream<int>& in, hls::stream<int>& out, int k) {
  for (int i = 0; i < SEQ_N; ++i) out.write(in.read() + k);
}
void seq_sink(hls::stream<int>& in, hls::stream<int>& out) {
  for (int i = 0; i < SEQ_N; ++i) out.write(in.read());
}

// first region: src -> add 1 -> mid (mid holds every token until the second region runs)
void stage1(hls::stream<int>& mid) {
#pragma HLS dataflow
  DFOPT_DATAFLOW_BEGIN("stage1");
  hls::stream<int> a("a");
  DFOPT_PROCESS(seq_src(a));
  DFOPT_PROCESS(seq_add(a, mid, 1));
  DFOPT_DATAFLOW_END();
}

// second region: mid -> add 10 -> [nested region: add 100 -> sink] -> out
void add_then_sink(hls::stream<int>& in, hls::stream<int>& out) {
#pragma HLS dataflow
  DFOPT_DATAFLOW_BEGIN("inner");
  hls::stream<int> c("c");
  DFOPT_PROCESS(seq_add(in, c, 100));
  DFOPT_PROCESS(seq_sink(c, out));
  DFOPT_DATAFLOW_END();
}
void stage2(hls::stream<int>& mid, hls::stream<int>& out) {
#pragma HLS dataflow
  DFOPT_DATAFLOW_BEGIN("stage2");
  hls::stream<int> b("b");
  DFOPT_PROCESS(seq_add(mid, b, 10));
  DFOPT_PROCESS(add_then_sink(b, out));
  DFOPT_DATAFLOW_END();
}

void seq_top(hls::stream<int>& out) {
  hls::stream<int> mid("mid");
#pragma HLS stream variable=mid depth=16
  DFOPT_STREAM_DEPTH(mid, g_depth);  // SEQ_N: fits; less: stage1 cannot finish
  stage1(mid);
  stage2(mid, out);
  // two regions in one scope, one after the other
  DFOPT_DATAFLOW_BEGIN("again1");
  hls::stream<int> x("x");
  DFOPT_PROCESS(seq_src(x));
  DFOPT_PROCESS(seq_sink(x, out));
  DFOPT_DATAFLOW_END();
  DFOPT_DATAFLOW_BEGIN("again2");
  hls::stream<int> y("y");
  DFOPT_PROCESS(seq_src(y));
  DFOPT_PROCESS(seq_add(y, out, 1000));
  DFOPT_DATAFLOW_END();
}

int run_sequential() {
  int bad = 0;
  for (int call = 0; call < 3; ++call) {  // the top runs again and again, like a testbench loop
    hls::stream<int> out("out");
    seq_top(out);
    for (int i = 0; i < SEQ_N; ++i) bad += out.read() != i + 111;
    for (int i = 0; i < SEQ_N; ++i) bad += out.read() != i;
    for (int i = 0; i < SEQ_N; ++i) bad += out.read() != i + 1000;
    bad += !out.empty();
  }
  std::printf("sequential bad=%d\n", bad);
  return bad != 0;
}

// a deadlock inside a nested region: the inner consumer reads its streams in the wrong order
void inner_pair(hls::stream<int>& p, hls::stream<int>& q) {
  for (int i = 0; i < 4; ++i) p.write(i);
  for (int i = 0; i < 4; ++i) q.write(i);
}
void inner_swapped(hls::stream<int>& p, hls::stream<int>& q, hls::stream<int>& out) {
  for (int i = 0; i < 4; ++i) out.write(q.read());
  for (int i = 0; i < 4; ++i) out.write(p.read());
}
void nested_bad(hls::stream<int>& out) {
  DFOPT_DATAFLOW_BEGIN("inner_bad");
  hls::stream<int> p("p"), q("q");
  DFOPT_PROCESS(inner_pair(p, q));
  DFOPT_PROCESS(inner_swapped(p, q, out));
  DFOPT_DATAFLOW_END();
}
int run_nested_deadlock() {
  hls::stream<int> out("out");
  DFOPT_DATAFLOW_BEGIN("outer");
  hls::stream<int> o("o");
  DFOPT_PROCESS(nested_bad(o));
  DFOPT_PROCESS(seq_sink(o, out));
  DFOPT_DATAFLOW_END();
  return 1;
}

// -- non-blocking calls, on the testbench thread ------------------------------------------------
int run_nonblocking() {
  hls::stream<int> s("s");
  dfopt::set_depth(s, 2);
  int v = -1;
  bool w1 = s.write_nb(1), w2 = s.write_nb(2), w3 = s.write_nb(3);
  bool full = s.full();
  std::size_t n = s.size();
  bool r1 = s.read_nb(v);
  int first = v;
  bool r2 = s.read_nb(v), r3 = s.read_nb(v);
  std::printf("nb %d%d%d full=%d size=%zu read %d%d%d v=%d,%d empty=%d\n", w1, w2, w3, full, n,
              r1, r2, r3, first, v, s.empty());
  return 0;
}

// a kernel that leaves tokens in a stream of its own
void local_fifo(hls::stream<int>& out) {
  hls::stream<int> local("local");
  DFOPT_STREAM_DEPTH(local, 4);
  for (int i = 0; i < 3; ++i) local.write(i);
  out.write(local.read());
}
int run_local_leftover() {
  hls::stream<int> out("out");
  dfopt::dataflow("local_top", {{"local_fifo", [&] { local_fifo(out); }}});
  return 1;
}

// -- misuse ------------------------------------------------------------------------------------
int run_two_writers() {
  hls::stream<int> out("out");
  DFOPT_DATAFLOW_BEGIN("two_writers");
  hls::stream<int> s("s");
  DFOPT_STREAM_DEPTH(s, 64);
  DFOPT_PROCESS(seq_src(s));
  DFOPT_PROCESS(seq_src(s));
  DFOPT_PROCESS(seq_sink(s, out));
  DFOPT_DATAFLOW_END();
  return 1;
}

void thrower(hls::stream<int>& s) {
  s.write(1);
  throw std::runtime_error("kernel failed");
}
int run_throw() {
  hls::stream<int> s("s");
  dfopt::set_depth(s, 4);
  dfopt::dataflow("throw_top", {{"thrower", [&] { thrower(s); }}});
  return 1;
}

int run_testbench_empty() {
  hls::stream<int> out("out");
  out.read();  // nothing can ever write it
  return 1;
}

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  if (argc > 2) g_depth = std::atoi(argv[2]);
  const char* s = argv[1];
  if (!std::strcmp(s, "pipeline")) return run_pipeline();
  if (!std::strcmp(s, "pipeline_api")) return run_pipeline_api();
  if (!std::strcmp(s, "fork")) return run_fork();
  if (!std::strcmp(s, "leftover")) return run_leftover();
  if (!std::strcmp(s, "starved")) return run_starved();
  if (!std::strcmp(s, "sequential")) return run_sequential();
  if (!std::strcmp(s, "nested_deadlock")) return run_nested_deadlock();
  if (!std::strcmp(s, "two_writers")) return run_two_writers();
  if (!std::strcmp(s, "throw")) return run_throw();
  if (!std::strcmp(s, "testbench_empty")) return run_testbench_empty();
  if (!std::strcmp(s, "nonblocking")) return run_nonblocking();
  if (!std::strcmp(s, "local_leftover")) return run_local_leftover();
  std::fprintf(stderr, "unknown scenario %s\n", s);
  return 2;
}
