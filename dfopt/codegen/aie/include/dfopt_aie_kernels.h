// dfopt_aie_kernels.h: the ops of Dato tasks as AIE core kernels, scalar reference code (docs/aie.md).
//
// Plain C++ (C++14) that any compiler builds: the host compiler for the tests and the functional
// model, Peano or xchesscc for a core. Tiles are row-major; bf16 values travel as their 16 bits
// (dfopt_bf16, round to nearest even on the way in); every sum accumulates in float.
//
//   dfopt::matmul<M, K, N>(a, b, c, acc)      c (M x N) = [c +] a (M x K) @ b (K x N)
//   dfopt::matmul_bt<M, K, N>(a, b, c, acc)   c = [c +] a @ b^T, b given as N x K (scores q k^T)
//   dfopt::add<N>(a, b, out)                  out = a + b (allreduce: a partial sum accumulated)
//   dfopt::gelu<N>(x, out)                    the tanh approximation
//   dfopt::row_sum<R, C>(x, out)              out[r] = sum_c x[r][c] (reduce_sum over axis 1)
//   dfopt::softmax_block<R, C>(s, m, l, p, alpha)
//       one block of an online softmax: m_new = max(m, rowmax(s)); p = exp(s - m_new);
//       alpha = exp(m - m_new); l = alpha * l + rowsum(p); m = m_new (m starts at -inf, l at 0)
//   dfopt::rescale<R, D>(acc, alpha)          acc[r][:] *= alpha[r] (before acc += p @ v)
//   dfopt::normalize<R, D>(acc, l, out)       out[r][:] = acc[r][:] / l[r]
//   dfopt::convert<N>(x, out), dfopt::fill<N>(out, value)   element type changes, constants
#pragma once

#include <math.h>
#include <stdint.h>
#include <string.h>

struct dfopt_bf16 {
  uint16_t bits;
};

namespace dfopt {

inline float to_float(float x) { return x; }
inline float to_float(dfopt_bf16 x) {
  uint32_t u = (uint32_t)x.bits << 16;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

template <typename T> inline T from_float(float x);
template <> inline float from_float<float>(float x) { return x; }
template <> inline dfopt_bf16 from_float<dfopt_bf16>(float x) {
  uint32_t u;
  memcpy(&u, &x, sizeof u);
  dfopt_bf16 out;
  if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu)) {   // NaN stays a quiet NaN
    out.bits = (uint16_t)((u >> 16) | 0x40u);
    return out;
  }
  u += 0x7fffu + ((u >> 16) & 1u);                                  // round to nearest, ties to even
  out.bits = (uint16_t)(u >> 16);
  return out;
}

// c = [c +] a @ b, with b's element (k, n) at b[k * BK + n * BN]: row-major K x N (BK = N, BN = 1)
// or, for b^T, row-major N x K (BK = 1, BN = K)
template <int M, int K, int N, int BK, int BN, typename TA, typename TB, typename TC>
void matmul_strided(const TA* a, const TB* b, TC* c, bool acc) {
  for (int m = 0; m < M; m++)
    for (int n = 0; n < N; n++) {
      float s = acc ? to_float(c[m * N + n]) : 0.0f;
      for (int k = 0; k < K; k++) s += to_float(a[m * K + k]) * to_float(b[k * BK + n * BN]);
      c[m * N + n] = from_float<TC>(s);
    }
}

template <int M, int K, int N, typename TA, typename TB, typename TC>
void matmul(const TA* a, const TB* b, TC* c, bool acc) {
  matmul_strided<M, K, N, N, 1>(a, b, c, acc);
}

template <int M, int K, int N, typename TA, typename TB, typename TC>
void matmul_bt(const TA* a, const TB* b, TC* c, bool acc) {
  matmul_strided<M, K, N, 1, K>(a, b, c, acc);
}

template <int N, typename T> void add(const T* a, const T* b, T* out) {
  for (int i = 0; i < N; i++) out[i] = from_float<T>(to_float(a[i]) + to_float(b[i]));
}

template <int N, typename TI, typename TO> void convert(const TI* x, TO* out) {
  for (int i = 0; i < N; i++) out[i] = from_float<TO>(to_float(x[i]));
}

template <int N, typename T> void fill(T* out, float value) {
  for (int i = 0; i < N; i++) out[i] = from_float<T>(value);
}

template <int N, typename TI, typename TO> void gelu(const TI* x, TO* out) {
  const float c = 0.7978845608028654f;   // sqrt(2 / pi)
  for (int i = 0; i < N; i++) {
    float v = to_float(x[i]);
    out[i] = from_float<TO>(0.5f * v * (1.0f + tanhf(c * (v + 0.044715f * v * v * v))));
  }
}

template <int R, int C, typename T> void row_sum(const T* x, float* out) {
  for (int r = 0; r < R; r++) {
    float s = 0.0f;
    for (int c = 0; c < C; c++) s += to_float(x[r * C + c]);
    out[r] = s;
  }
}

template <int R, int C, typename TP>
void softmax_block(const float* s, float* m, float* l, TP* p, float* alpha) {
  for (int r = 0; r < R; r++) {
    float hi = m[r];
    for (int c = 0; c < C; c++) hi = s[r * C + c] > hi ? s[r * C + c] : hi;
    float a = m[r] == -INFINITY ? 0.0f : expf(m[r] - hi);
    float sum = 0.0f;
    for (int c = 0; c < C; c++) {
      TP e = from_float<TP>(expf(s[r * C + c] - hi));
      p[r * C + c] = e;
      sum += to_float(e);                   // the sum of what gemm1 multiplies
    }
    l[r] = a * l[r] + sum;
    alpha[r] = a;
    m[r] = hi;
  }
}

template <int R, int D> void rescale(float* acc, const float* alpha) {
  for (int r = 0; r < R; r++)
    for (int d = 0; d < D; d++) acc[r * D + d] *= alpha[r];
}

template <int R, int D, typename TO> void normalize(const float* acc, const float* l, TO* out) {
  for (int r = 0; r < R; r++)
    for (int d = 0; d < D; d++) out[r * D + d] = from_float<TO>(acc[r * D + d] / l[r]);
}

}  // namespace dfopt
