// N-API addon: single-precision GEMM through the platform's BLAS (OpenBLAS on Linux, Accelerate on
// macOS), run in place on the tfjs-wasm heap so tensors are never copied in or out.
#include <node_api.h>
#include <pthread.h>
#include <stdint.h>
#include <stddef.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

// The CBLAS ABI is the same everywhere (enums are ints), so no BLAS header is needed to build.
enum { RowMajor = 101, NoTrans = 111, Trans = 112 };
extern void cblas_sgemm(int order, int transA, int transB, int M, int N, int K, float alpha,
                        const float *A, int lda, const float *B, int ldb, float beta, float *C, int ldc);
extern void cblas_sgemv(int order, int trans, int M, int N, float alpha, const float *A, int lda,
                        const float *x, int incx, float beta, float *y, int incy);

// OpenBLAS only (weak: absent from other BLAS libraries, which then run as they are).
extern void openblas_set_num_threads(int n) __attribute__((weak));
extern int openblas_get_num_threads(void) __attribute__((weak));
extern char *openblas_get_corename(void) __attribute__((weak));

// Below this many multiply-adds per matrix, OpenBLAS's own threading costs more than it gains:
// such batches (attention heads) run single-threaded BLAS, two halves of the batch side by side.
#define SMALL_GEMM (1 << 22)

// ---- Work split over the cores (the pointwise ops, AdamW, attention) ----
// The elementwise and row-wise ops were single-threaded and attention used two threads at most: on a
// many-core host they, not the BLAS products, became the step's time (issue 29 item 4: the 3M training
// step at 0.68x PyTorch CPU on 16 cores). As many parts as BLAS has threads (OPENBLAS_NUM_THREADS, else
// the cores), each at least `minPer` items so a thread's start (~20 us) stays small beside its work.
#define MAX_PARTS 32
typedef void (*PartFn)(void *ctx, int64_t lo, int64_t hi, int part);
typedef struct {
  PartFn fn;
  void *ctx;
  int64_t lo, hi;
  int part;
} Part;

static void *part_thread(void *p) {
  const Part *t = (const Part *)p;
  t->fn(t->ctx, t->lo, t->hi, t->part);
  return NULL;
}

static int cpu_parts(int64_t n, int64_t minPer) {
  int threads = openblas_get_num_threads ? openblas_get_num_threads() : 1;
  if (threads > MAX_PARTS) threads = MAX_PARTS;
  int64_t byWork = minPer > 0 ? n / minPer : n;
  if (byWork < threads) threads = (int)(byWork < 1 ? 1 : byWork);
  return threads < 1 ? 1 : threads;
}

// Runs fn over [0, n) in `parts` contiguous ranges side by side (this thread takes the first; a thread
// that cannot be started runs its range here). With BLAS single-threaded meanwhile: ranges that call
// BLAS (attention) must not each start a pool of their own.
static void run_parts(int64_t n, int parts, PartFn fn, void *ctx) {
  if (parts <= 1 || n <= 1) {
    fn(ctx, 0, n, 0);
    return;
  }
  if (parts > n) parts = (int)n;
  const int blas = openblas_get_num_threads && openblas_set_num_threads ? openblas_get_num_threads() : 0;
  if (blas > 1) openblas_set_num_threads(1);
  Part ps[MAX_PARTS];
  pthread_t th[MAX_PARTS];
  int started[MAX_PARTS];
  for (int i = 0; i < parts; i++) {
    ps[i] = (Part){fn, ctx, n * i / parts, n * (i + 1) / parts, i};
    started[i] = i > 0 && pthread_create(&th[i], NULL, part_thread, &ps[i]) == 0;
  }
  fn(ctx, ps[0].lo, ps[0].hi, 0);
  for (int i = 1; i < parts; i++) {
    if (started[i]) pthread_join(th[i], NULL);
    else fn(ctx, ps[i].lo, ps[i].hi, i);
  }
  if (blas > 1) openblas_set_num_threads(blas);
}

// exp(x) in float that the compiler vectorises (libm's expf is a call per element: in the softmax,
// SwiGLU and log-prob loops it was ~6x slower than this over AVX-512). Cody-Waite reduction
// x = n ln2 + r, Cephes' degree-6 polynomial for e^r, 2^n from exponent bits. Within 1 ulp of expf on
// [-87.3, 88.7] (checked there); 0 below (the normal range's floor), +inf above, NaN stays NaN.
static inline float exp_v(float x) {
  const float lo = -87.33654f, hi = 88.72283935546875f;
  float xc = x > hi ? hi : x;
  xc = xc < lo ? lo : xc;
  // Round to nearest by the 1.5 * 2^23 trick (floorf blocks vectorisation without -ffast-math).
  const float n = (xc * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
  float r = xc - n * 0.693359375f;
  r = r + n * 2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const float er = p * r * r + r + 1.0f;
  // 2^n as two factors, each a normal float for n in [-126, 128].
  const int32_t ni = (int32_t)n, h = ni >> 1;
  const int32_t b1 = (h + 127) << 23, b2 = (ni - h + 127) << 23;
  float s1, s2;
  memcpy(&s1, &b1, sizeof s1);
  memcpy(&s2, &b2, sizeof s2);
  const float y = er * s1 * s2;
  return x < lo ? 0.0f : (x > 88.72284f ? INFINITY : y);
}

typedef struct {
  int64_t from, to, M, N, K, sA, sB;
  int tA, tB, lda, ldb;
  const float *A, *B;
  float *C;
} Job;

// Products this small (decode-time attention: one query row per head) cost more in BLAS call and
// threading overhead than in arithmetic; plain loops, ordered so the inner loop is contiguous.
#define TINY_GEMM (1 << 15)

static void tiny_gemm(const Job *j, const float *A, const float *B, float *C) {
  const int64_t M = j->M, N = j->N, K = j->K;
  const int lda = j->lda, ldb = j->ldb;
  if (!j->tB) {
    for (int64_t m = 0; m < M; m++) {
      float *c = C + m * N;
      for (int64_t n = 0; n < N; n++) c[n] = 0.0f;
      for (int64_t k = 0; k < K; k++) {
        const float a = j->tA ? A[k * lda + m] : A[m * lda + k];
        const float *b = B + k * ldb;
        for (int64_t n = 0; n < N; n++) c[n] += a * b[n];
      }
    }
  } else if (!j->tA) {
    for (int64_t m = 0; m < M; m++) {
      const float *a = A + m * lda;
      for (int64_t n = 0; n < N; n++) {
        const float *b = B + n * ldb;
        float acc = 0.0f;
#pragma omp simd reduction(+ : acc)
        for (int64_t k = 0; k < K; k++) acc += a[k] * b[k];
        C[m * N + n] = acc;
      }
    }
  } else {
    for (int64_t m = 0; m < M; m++)
      for (int64_t n = 0; n < N; n++) {
        float acc = 0.0f;
        for (int64_t k = 0; k < K; k++) acc += A[k * lda + m] * B[n * ldb + k];
        C[m * N + n] = acc;
      }
  }
}

static void run_job(const Job *j) {
  const int tiny = j->M * j->N * j->K <= TINY_GEMM;
  for (int64_t i = j->from; i < j->to; i++) {
    float *Ci = j->C + i * j->M * j->N;
    if (j->K == 0) {
      for (int64_t e = 0; e < j->M * j->N; e++) Ci[e] = 0.0f;
      continue;
    }
    if (tiny) {
      tiny_gemm(j, j->A + i * j->sA, j->B + i * j->sB, Ci);
      continue;
    }
    cblas_sgemm(RowMajor, j->tA ? Trans : NoTrans, j->tB ? Trans : NoTrans, (int)j->M, (int)j->N, (int)j->K, 1.0f,
                j->A + i * j->sA, j->lda, j->B + i * j->sB, j->ldb, 0.0f, Ci, (int)j->N);
  }
}

// One part of a batch (run_parts): matrices [lo, hi) of the job.
static void job_part(void *ctx, int64_t lo, int64_t hi, int part) {
  (void)part;
  Job j = *(const Job *)ctx;
  j.from = lo;
  j.to = hi;
  run_job(&j);
}

#define CHECK(call) do { if ((call) != napi_ok) { napi_throw_error(env, NULL, #call " failed"); return NULL; } } while (0)

static int64_t arg_i64(napi_env env, napi_value v, int *ok) {
  int64_t x = 0;
  if (napi_get_value_int64(env, v, &x) != napi_ok) *ok = 0;
  return x;
}

// sgemm(heap: ArrayBuffer, aByteOff, bByteOff, cByteOff, batch, M, N, K, transA, transB,
//       strideA, strideB) with strides in elements (0 broadcasts one matrix over the batch).
// C[i] = op(A[i]) @ op(B[i]) for i < batch, all row-major and contiguous, C strided M*N.
static napi_value Sgemm(napi_env env, napi_callback_info info) {
  size_t argc = 12;
  napi_value argv[12];
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  if (argc != 12) { napi_throw_type_error(env, NULL, "sgemm expects 12 arguments"); return NULL; }
  void *base = NULL;
  size_t len = 0;
  if (napi_get_arraybuffer_info(env, argv[0], &base, &len) != napi_ok) {
    napi_throw_type_error(env, NULL, "sgemm: first argument must be an ArrayBuffer");
    return NULL;
  }
  int ok = 1;
  int64_t aOff = arg_i64(env, argv[1], &ok), bOff = arg_i64(env, argv[2], &ok), cOff = arg_i64(env, argv[3], &ok);
  int64_t batch = arg_i64(env, argv[4], &ok), M = arg_i64(env, argv[5], &ok), N = arg_i64(env, argv[6], &ok), K = arg_i64(env, argv[7], &ok);
  int64_t tA = arg_i64(env, argv[8], &ok), tB = arg_i64(env, argv[9], &ok);
  int64_t sA = arg_i64(env, argv[10], &ok), sB = arg_i64(env, argv[11], &ok);
  if (!ok) { napi_throw_type_error(env, NULL, "sgemm: arguments 2-12 must be integers"); return NULL; }
  if (batch < 0 || M < 0 || N < 0 || K < 0 || sA < 0 || sB < 0 || aOff < 0 || bOff < 0 || cOff < 0 ||
      (aOff | bOff | cOff) % 4 != 0) {
    napi_throw_range_error(env, NULL, "sgemm: negative size or unaligned offset");
    return NULL;
  }
  // Bounds: every matrix read or written must lie inside the buffer.
  int64_t lenF = (int64_t)(len / 4);
  int64_t lastA = aOff / 4 + (batch > 0 ? (batch - 1) * sA : 0) + M * K;
  int64_t lastB = bOff / 4 + (batch > 0 ? (batch - 1) * sB : 0) + K * N;
  int64_t lastC = cOff / 4 + batch * M * N;
  if (lastA > lenF || lastB > lenF || lastC > lenF) {
    napi_throw_range_error(env, NULL, "sgemm: matrices exceed the buffer");
    return NULL;
  }
  float *f = (float *)base;
  const float *A = f + aOff / 4;
  const float *B = f + bOff / 4;
  float *C = f + cOff / 4;
  int lda = tA ? (int)M : (int)K;
  int ldb = tB ? (int)K : (int)N;
  if (M == 0 || N == 0 || batch == 0) return NULL;
  Job all = {0, batch, M, N, K, sA, sB, (int)tA, (int)tB, lda, ldb, A, B, C};
  int small = M * N * K < SMALL_GEMM && M * N * K > TINY_GEMM && openblas_set_num_threads && openblas_get_num_threads;
  int threads = small ? openblas_get_num_threads() : 1;
  if (!small || threads < 2) {
    run_job(&all);
    return NULL;
  }
  // Two halves of the batch side by side, each with single-threaded BLAS (a lone matrix too).
  openblas_set_num_threads(1);
  run_parts(batch, 2, job_part, &all);
  openblas_set_num_threads(threads);
  return NULL;
}

// ---- One decoding step of the Llama-style transformer (backend/model/transformer.ts), fused ----
// Weights are read in place from the wasm heap; the KV cache, key mask, scratch and logits live in a
// JS-owned state buffer. Index layout of the `cfg` (Int32Array) and `off` (Float64Array) arguments
// is shared with backend/model/native-decode.ts. The optional 8th argument (an Array as long as
// `off`) gives, per weight slot, a Float32Array outside the heap (frozen weights kept outside it,
// backend/model/external-weights.ts) that replaces the heap offset: projections and an untied head
// there are in Hugging Face's [out, in] layout, the embedding table [vocab, dModel] as in the heap.
// C_T new positions per row (1 when decoding; the prompt's length when prefilling): rows of
// `tokens`, the scratch regions and the projections' M are B * T, the logits are the last position's.
enum { C_B, C_D, C_H, C_KV, C_HD, C_F, C_V, C_L, C_MAXT, C_POS, C_TIED, C_T, C_N };
enum { O_EMBED, O_NORM, O_HEAD, O_COS, O_SIN, O_MASK, O_X, O_H, O_Q, O_K, O_V, O_ATT, O_G, O_U, O_LOGITS, O_SCORES, O_LAYERS };
enum { L_IN, L_Q, L_K, L_V, L_O, L_POST, L_GATE, L_UP, L_DOWN, L_KC, L_VC, L_N };

static void gemm_nn(int M, int N, int K, const float *A, const float *B, float *C, float beta) {
  cblas_sgemm(RowMajor, NoTrans, NoTrans, M, N, K, 1.0f, A, K, B, N, beta, C, N);
}

// Up to this many rows, a decode product runs as one mat-vec per row: OpenBLAS 0.3.21's sgemm packs
// the whole weight matrix and pads M to its kernel's height, so at one row it streams the weights at
// less than half the speed of sgemv (measured at the SmolLM2-135M shape: 118 vs 54 ms a token, 1 thread).
#define DECODE_GEMV_ROWS 2

// C[M, N] (+)= A[M, K] @ W[K, N], W row-major [in, out] (the model's own layout).
static void decode_proj(int M, int N, int K, const float *A, const float *W, float *C, float beta) {
  if (M > DECODE_GEMV_ROWS) { gemm_nn(M, N, K, A, W, C, beta); return; }
  for (int m = 0; m < M; m++) cblas_sgemv(RowMajor, Trans, K, N, 1.0f, W, N, A + (int64_t)m * K, 1, beta, C + (int64_t)m * N, 1);
}

// The same product for W in HF's [out, in] layout (a weight outside the heap): C (+)= A @ W^T.
static void decode_proj_w(int M, int N, int K, const float *A, const float *W, int outIn, float *C, float beta) {
  if (!outIn) { decode_proj(M, N, K, A, W, C, beta); return; }
  if (M > DECODE_GEMV_ROWS) { cblas_sgemm(RowMajor, NoTrans, Trans, M, N, K, 1.0f, A, K, W, K, beta, C, N); return; }
  for (int m = 0; m < M; m++) cblas_sgemv(RowMajor, NoTrans, N, K, 1.0f, W, K, A + (int64_t)m * K, 1, beta, C + (int64_t)m * N, 1);
}

static void rms_norm(const float *x, const float *w, float *out, int rows, int D, float eps) {
  for (int r = 0; r < rows; r++) {
    const float *xr = x + (int64_t)r * D;
    float ss = 0.0f;
    for (int i = 0; i < D; i++) ss += xr[i] * xr[i];
    const float inv = 1.0f / sqrtf(ss / (float)D + eps);
    for (int i = 0; i < D; i++) out[(int64_t)r * D + i] = xr[i] * inv * w[i];
  }
}

// x[r, n*hd .. ] <- rope at position pos + r % T (rotate-half layout), for n heads of R rows.
static void rope(float *x, int64_t R, int T, int n, int hd, const float *cos0, const float *sin0, int pos) {
  const int half = hd / 2;
  for (int64_t r = 0; r < R; r++)
    for (int h = 0; h < n; h++) {
      const float *cos_p = cos0 + (int64_t)(pos + r % T) * hd, *sin_p = sin0 + (int64_t)(pos + r % T) * hd;
      float *v = x + (r * n + h) * hd;
      for (int i = 0; i < half; i++) {
        const float a = v[i], c = v[i + half];
        v[i] = a * cos_p[i] - c * sin_p[i];
        v[i + half] = c * cos_p[i + half] + a * sin_p[i + half];
      }
    }
}

static napi_value Decode(napi_env env, napi_callback_info info) {
  size_t argc = 8;
  napi_value argv[8];
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  if (argc < 6 || argc > 8) { napi_throw_type_error(env, NULL, "decode expects (heap, state, tokens, cfg, off, eps[, threads[, external]])"); return NULL; }
  void *heapP, *stateP, *tokP, *cfgP, *offP;
  size_t heapLen, stateLen, tokLen, cfgLen, offLen;
  napi_typedarray_type tt;
  napi_value ab;
  size_t bo;
  if (napi_get_arraybuffer_info(env, argv[0], &heapP, &heapLen) != napi_ok ||
      napi_get_arraybuffer_info(env, argv[1], &stateP, &stateLen) != napi_ok) {
    napi_throw_type_error(env, NULL, "decode: heap and state must be ArrayBuffers");
    return NULL;
  }
  if (napi_get_typedarray_info(env, argv[2], &tt, &tokLen, &tokP, &ab, &bo) != napi_ok || tt != napi_int32_array ||
      napi_get_typedarray_info(env, argv[3], &tt, &cfgLen, &cfgP, &ab, &bo) != napi_ok || tt != napi_int32_array || cfgLen != C_N ||
      napi_get_typedarray_info(env, argv[4], &tt, &offLen, &offP, &ab, &bo) != napi_ok || tt != napi_float64_array) {
    napi_throw_type_error(env, NULL, "decode: tokens Int32Array, cfg Int32Array(12), off Float64Array");
    return NULL;
  }
  double epsD;
  CHECK(napi_get_value_double(env, argv[5], &epsD));
  // BLAS threads for this step (default 1): on 2 cores a lone sequence's mat-vecs gain from both when
  // the machine is otherwise idle, and lose to 1 under load (OpenBLAS's workers spin), so the caller picks.
  int32_t stepThreads = 1;
  if (argc >= 7) CHECK(napi_get_value_int32(env, argv[6], &stepThreads));
  if (stepThreads < 1) stepThreads = 1;
  const int32_t *cfg = (const int32_t *)cfgP;
  const double *off = (const double *)offP;
  const int B = cfg[C_B], D = cfg[C_D], H = cfg[C_H], KV = cfg[C_KV], hd = cfg[C_HD], F = cfg[C_F], V = cfg[C_V];
  const int L = cfg[C_L], maxT = cfg[C_MAXT], pos = cfg[C_POS], tied = cfg[C_TIED], T = cfg[C_T];
  const int64_t R = (int64_t)B * T;
  // Q/K/V biases (Qwen2): 3 more slots per layer after the layers' own, [q, k, v] per layer, on the heap.
  const int hasBias = offLen == (size_t)(O_LAYERS + L * L_N + 3 * L);
  if ((offLen != (size_t)(O_LAYERS + L * L_N) && !hasBias) || B <= 0 || T <= 0 || (int64_t)tokLen != R || pos < 0 || pos + T > maxT || KV <= 0 || H % KV != 0 || hd % 2) {
    napi_throw_range_error(env, NULL, "decode: inconsistent sizes");
    return NULL;
  }
  // Weights outside the heap, by slot: their data and length in floats (NULL where the slot is on the heap).
  const float **extP = calloc(offLen, sizeof(float *));
  int64_t *extN = calloc(offLen, sizeof(int64_t));
  if (!extP || !extN) {
    free(extP);
    free(extN);
    napi_throw_error(env, NULL, "decode: out of memory");
    return NULL;
  }
  if (argc == 8) {
    napi_valuetype et;
    uint32_t extLen = 0;
    int extOk = napi_typeof(env, argv[7], &et) == napi_ok;
    const int given = extOk && et != napi_undefined && et != napi_null;
    if (given) extOk = napi_get_array_length(env, argv[7], &extLen) == napi_ok && extLen == offLen;
    for (uint32_t i = 0; given && extOk && i < extLen; i++) {
      napi_value el;
      size_t n;
      void *d;
      extOk = napi_get_element(env, argv[7], i, &el) == napi_ok && napi_typeof(env, el, &et) == napi_ok;
      if (!extOk || et == napi_undefined || et == napi_null) continue;
      extOk = napi_get_typedarray_info(env, el, &tt, &n, &d, &ab, &bo) == napi_ok && tt == napi_float32_array;
      extP[i] = (const float *)d;
      extN[i] = (int64_t)n;
    }
    if (!extOk) {
      free(extP);
      free(extN);
      napi_throw_type_error(env, NULL, "decode: external must be an Array as long as off, of Float32Array or undefined");
      return NULL;
    }
  }
  // Every region must lie inside its buffer: (offset in bytes, floats) for heap (h) or state (s); a
  // weight outside the heap must hold exactly its matrix.
  const int64_t hLenF = (int64_t)(heapLen / 4), sLenF = (int64_t)(stateLen / 4);
#define IN_HEAP(o, n) ((o) >= 0 && (int64_t)(o) % 4 == 0 && (int64_t)(o) / 4 + (int64_t)(n) <= hLenF)
#define IN_STATE(o, n) ((o) >= 0 && (int64_t)(o) % 4 == 0 && (int64_t)(o) / 4 + (int64_t)(n) <= sLenF)
#define W_OK(slot, n) (extP[slot] ? extN[slot] == (int64_t)(n) : IN_HEAP(off[slot], n))
  const int64_t LB = O_LAYERS;
  int ok = W_OK(O_EMBED, (int64_t)V * D) && IN_HEAP(off[O_NORM], D) && W_OK(O_HEAD, (int64_t)V * D) && !extP[O_NORM] && !extP[O_COS] && !extP[O_SIN] &&
           IN_HEAP(off[O_COS], (int64_t)maxT * hd) && IN_HEAP(off[O_SIN], (int64_t)maxT * hd) &&
           IN_STATE(off[O_MASK], (int64_t)B * maxT) && IN_STATE(off[O_X], R * D) && IN_STATE(off[O_H], R * D) &&
           IN_STATE(off[O_Q], R * H * hd) && IN_STATE(off[O_K], R * KV * hd) && IN_STATE(off[O_V], R * KV * hd) &&
           IN_STATE(off[O_ATT], R * H * hd) && IN_STATE(off[O_G], R * F) && IN_STATE(off[O_U], R * F) &&
           IN_STATE(off[O_LOGITS], (int64_t)B * V) && IN_STATE(off[O_SCORES], maxT);
  for (int l = 0; ok && l < L; l++) {
    const double *lo = off + O_LAYERS + l * L_N;
    const int64_t s = LB + (int64_t)l * L_N;
    ok = IN_HEAP(lo[L_IN], D) && W_OK(s + L_Q, (int64_t)D * H * hd) && W_OK(s + L_K, (int64_t)D * KV * hd) &&
         W_OK(s + L_V, (int64_t)D * KV * hd) && W_OK(s + L_O, (int64_t)H * hd * D) && IN_HEAP(lo[L_POST], D) &&
         W_OK(s + L_GATE, (int64_t)D * F) && W_OK(s + L_UP, (int64_t)D * F) && W_OK(s + L_DOWN, (int64_t)F * D) &&
         IN_STATE(lo[L_KC], (int64_t)B * KV * maxT * hd) && IN_STATE(lo[L_VC], (int64_t)B * KV * maxT * hd) &&
         !extP[s + L_IN] && !extP[s + L_POST] && !extP[s + L_KC] && !extP[s + L_VC];
    if (ok && hasBias) {
      const int64_t bs = LB + (int64_t)L * L_N + 3 * (int64_t)l;
      ok = IN_HEAP(off[bs], (int64_t)H * hd) && IN_HEAP(off[bs + 1], (int64_t)KV * hd) && IN_HEAP(off[bs + 2], (int64_t)KV * hd) &&
           !extP[bs] && !extP[bs + 1] && !extP[bs + 2];
    }
  }
  const int32_t *tok = (const int32_t *)tokP;
  for (int64_t r = 0; ok && r < R; r++) ok = tok[r] >= 0 && tok[r] < V;
  if (!ok) {
    free(extP);
    free(extN);
    napi_throw_range_error(env, NULL, "decode: a region or token id is outside its buffer");
    return NULL;
  }
  float *hp = (float *)heapP, *sp = (float *)stateP;
#define HP(o) (hp + (int64_t)(o) / 4)
#define SP(o) (sp + (int64_t)(o) / 4)
// A weight slot: outside the heap when given there, else at its heap offset.
#define WP(slot) (extP[slot] ? extP[slot] : HP(off[slot]))
  const float eps = (float)epsD;
  float *x = SP(off[O_X]), *h = SP(off[O_H]), *q = SP(off[O_Q]), *k = SP(off[O_K]), *v = SP(off[O_V]);
  float *att = SP(off[O_ATT]), *g = SP(off[O_G]), *u = SP(off[O_U]), *scores = SP(off[O_SCORES]);
  float *mask = SP(off[O_MASK]);
  const float *cosP = HP(off[O_COS]), *sinP = HP(off[O_SIN]);
  const float *embed = WP(O_EMBED);
  for (int64_t r = 0; r < R; r++)
    for (int i = 0; i < D; i++) x[r * D + i] = embed[(int64_t)tok[r] * D + i];
  // A decode step's token is real in every row; a prefill's positions were masked by the caller (left padding).
  if (T == 1)
    for (int b = 0; b < B; b++) mask[(int64_t)b * maxT + pos] = 1.0f;
  const int rep = H / KV;
  const float scale = 1.0f / sqrtf((float)hd);
  const int threads = openblas_get_num_threads && openblas_set_num_threads ? openblas_get_num_threads() : 1;
  if (openblas_set_num_threads && threads != stepThreads) openblas_set_num_threads(stepThreads);
  for (int l = 0; l < L; l++) {
    const double *lo = off + O_LAYERS + l * L_N;
    float *kc = SP(lo[L_KC]), *vc = SP(lo[L_VC]);
    const int64_t s = LB + (int64_t)l * L_N;
#define PROJ(M, N, K, A, slot, C, beta) decode_proj_w(M, N, K, A, WP(s + (slot)), extP[s + (slot)] != NULL, C, beta)
    rms_norm(x, HP(lo[L_IN]), h, (int)R, D, eps);
    if (hasBias) {
      // Each row starts from its bias and the product adds to it (beta 1).
      const int64_t bs = LB + (int64_t)L * L_N + 3 * (int64_t)l;
      const float *qb = HP(off[bs]), *kb = HP(off[bs + 1]), *vb = HP(off[bs + 2]);
      for (int64_t r = 0; r < R; r++) {
        memcpy(q + r * H * hd, qb, sizeof(float) * H * hd);
        memcpy(k + r * KV * hd, kb, sizeof(float) * KV * hd);
        memcpy(v + r * KV * hd, vb, sizeof(float) * KV * hd);
      }
    }
    const float qkvBeta = hasBias ? 1.0f : 0.0f;
    PROJ(R, H * hd, D, h, L_Q, q, qkvBeta);
    PROJ(R, KV * hd, D, h, L_K, k, qkvBeta);
    PROJ(R, KV * hd, D, h, L_V, v, qkvBeta);
    rope(q, R, T, H, hd, cosP, sinP, pos);
    rope(k, R, T, KV, hd, cosP, sinP, pos);
    for (int b = 0; b < B; b++)
      for (int t = 0; t < T; t++)
        for (int j = 0; j < KV; j++) {
          const int64_t dst = (((int64_t)b * KV + j) * maxT + pos + t) * hd, src = (((int64_t)b * T + t) * KV + j) * hd;
          for (int i = 0; i < hd; i++) {
            kc[dst + i] = k[src + i];
            vc[dst + i] = v[src + i];
          }
        }
    for (int b = 0; b < B; b++) {
      const float *mb = mask + (int64_t)b * maxT;
      for (int tq = 0; tq < T; tq++) {
        const int last = pos + tq; // causal: keys up to the query's own position
        for (int hh = 0; hh < H; hh++) {
          const int j = hh / rep;
          const float *qv = q + (((int64_t)b * T + tq) * H + hh) * hd;
          const float *kb = kc + ((int64_t)b * KV + j) * maxT * hd, *vb = vc + ((int64_t)b * KV + j) * maxT * hd;
          float mx = -INFINITY;
          for (int t = 0; t <= last; t++) {
            if (mb[t] == 0.0f) continue;
            const float *kt = kb + (int64_t)t * hd;
            float acc = 0.0f;
#pragma omp simd reduction(+ : acc)
            for (int i = 0; i < hd; i++) acc += qv[i] * kt[i];
            scores[t] = acc * scale;
            if (scores[t] > mx) mx = scores[t];
          }
          float *o = att + (((int64_t)b * T + tq) * H + hh) * hd;
          for (int i = 0; i < hd; i++) o[i] = 0.0f;
          if (mx == -INFINITY) continue; // a left-padding query with no real key yet: zero output, never read
          float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
          for (int t = 0; t <= last; t++) {
            const float e = mb[t] != 0.0f ? exp_v(scores[t] - mx) : 0.0f;
            scores[t] = e;
            sum += e;
          }
          const float inv = 1.0f / sum;
          for (int t = 0; t <= last; t++) {
            if (mb[t] == 0.0f) continue;
            const float p = scores[t] * inv;
            const float *vt = vb + (int64_t)t * hd;
            for (int i = 0; i < hd; i++) o[i] += p * vt[i];
          }
        }
      }
    }
    PROJ(R, D, H * hd, att, L_O, x, 1.0f); // x += att @ Wo
    rms_norm(x, HP(lo[L_POST]), h, (int)R, D, eps);
    PROJ(R, F, D, h, L_GATE, g, 0.0f);
    PROJ(R, F, D, h, L_UP, u, 0.0f);
#pragma omp simd
    for (int64_t i = 0; i < R * F; i++) g[i] = g[i] / (1.0f + exp_v(-g[i])) * u[i];
    PROJ(R, D, F, g, L_DOWN, x, 1.0f); // x += swiglu @ Wdown
#undef PROJ
  }
  // Logits of each row's last position only.
  for (int b = 0; b < B; b++) rms_norm(x + ((int64_t)b * T + T - 1) * D, HP(off[O_NORM]), h + (int64_t)b * D, 1, D, eps);
  float *logits = SP(off[O_LOGITS]);
  // A tied head is the embedding table [V, D]; an untied one outside the heap is [V, D] too.
  decode_proj_w(B, V, D, h, WP(O_HEAD), tied || extP[O_HEAD] != NULL, logits, 0.0f);
  if (openblas_set_num_threads && threads != stepThreads) openblas_set_num_threads(threads);
  free(extP);
  free(extN);
  return NULL;
}

// ---- Fused causal attention for training (forward and backward), no transposes ----
// q [B, T, H, hd], k and v [B, T, KV, hd] (the projections' own layout), keyMask [B, T] (1 real,
// 0 padding), out [B, T, H, hd], probs [B, H, T, T] (kept for the backward pass). Query rows with
// no visible key (left padding) get zero output. Work is split over the batch (run_parts).
typedef struct {
  int b0, b1, T, H, KV, hd;
  float scale;
  const float *q, *k, *v, *mask, *dout;
  float *out, *probs, *dq, *dk, *dv, *scratch;
} AttnJob;

static void attn_forward_rows(const AttnJob *j) {
  const int T = j->T, H = j->H, KV = j->KV, hd = j->hd, rep = H / KV;
  const int ldq = H * hd, ldk = KV * hd;
  for (int b = j->b0; b < j->b1; b++) {
    const float *mb = j->mask + (int64_t)b * T;
    for (int h = 0; h < H; h++) {
      const int kvh = h / rep;
      const float *Q = j->q + (int64_t)b * T * ldq + h * hd;
      const float *K = j->k + (int64_t)b * T * ldk + kvh * hd;
      const float *V = j->v + (int64_t)b * T * ldk + kvh * hd;
      float *P = j->probs + ((int64_t)b * H + h) * T * T;
      float *O = j->out + (int64_t)b * T * ldq + h * hd;
      cblas_sgemm(RowMajor, NoTrans, Trans, T, T, hd, j->scale, Q, ldq, K, ldk, 0.0f, P, T);
      for (int t = 0; t < T; t++) {
        float *row = P + (int64_t)t * T;
        float mx = -INFINITY;
        for (int s = 0; s <= t; s++)
          if (mb[s] != 0.0f && row[s] > mx) mx = row[s];
        if (mx == -INFINITY) {
          for (int s = 0; s < T; s++) row[s] = 0.0f;
          continue;
        }
        float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
        for (int s = 0; s <= t; s++) {
          const float e = mb[s] != 0.0f ? exp_v(row[s] - mx) : 0.0f;
          row[s] = e;
          sum += e;
        }
        const float inv = 1.0f / sum;
        for (int s = 0; s <= t; s++) row[s] *= inv;
        for (int s = t + 1; s < T; s++) row[s] = 0.0f;
      }
      cblas_sgemm(RowMajor, NoTrans, NoTrans, T, hd, T, 1.0f, P, T, V, ldk, 0.0f, O, ldq);
    }
  }
}

static void attn_backward_rows(const AttnJob *j) {
  const int T = j->T, H = j->H, KV = j->KV, hd = j->hd, rep = H / KV;
  const int ldq = H * hd, ldk = KV * hd;
  float *dP = j->scratch;
  for (int b = j->b0; b < j->b1; b++) {
    // dk and dv of this batch row accumulate over the heads sharing a kv head: zero them first.
    for (int64_t i = 0; i < (int64_t)T * ldk; i++) {
      j->dk[(int64_t)b * T * ldk + i] = 0.0f;
      j->dv[(int64_t)b * T * ldk + i] = 0.0f;
    }
    for (int h = 0; h < H; h++) {
      const int kvh = h / rep;
      const int64_t qo = (int64_t)b * T * ldq + h * hd, ko = (int64_t)b * T * ldk + kvh * hd;
      const float *P = j->probs + ((int64_t)b * H + h) * T * T;
      cblas_sgemm(RowMajor, NoTrans, Trans, T, T, hd, 1.0f, j->dout + qo, ldq, j->v + ko, ldk, 0.0f, dP, T);
      for (int t = 0; t < T; t++) {
        const float *p = P + (int64_t)t * T;
        float *d = dP + (int64_t)t * T;
        float dot = 0.0f;
        for (int s = 0; s <= t; s++) dot += p[s] * d[s];
        for (int s = 0; s <= t; s++) d[s] = p[s] * (d[s] - dot);
        for (int s = t + 1; s < T; s++) d[s] = 0.0f;
      }
      cblas_sgemm(RowMajor, NoTrans, NoTrans, T, hd, T, j->scale, dP, T, j->k + ko, ldk, 0.0f, j->dq + qo, ldq);
      cblas_sgemm(RowMajor, Trans, NoTrans, T, hd, T, j->scale, dP, T, j->q + qo, ldq, 1.0f, j->dk + ko, ldk);
      cblas_sgemm(RowMajor, Trans, NoTrans, T, hd, T, 1.0f, P, T, j->dout + qo, ldq, 1.0f, j->dv + ko, ldk);
    }
  }
}

typedef struct {
  const AttnJob *all;
  int backward;
  float *scratch;
} AttnRun;

static void attn_part(void *ctxp, int64_t lo, int64_t hi, int part) {
  const AttnRun *r = (const AttnRun *)ctxp;
  AttnJob j = *r->all;
  j.b0 = (int)lo;
  j.b1 = (int)hi;
  if (r->backward) {
    j.scratch = r->scratch + (size_t)part * j.T * j.T;
    attn_backward_rows(&j);
  } else {
    attn_forward_rows(&j);
  }
}

// Batch rows split over the cores, each part running single-threaded BLAS. Returns 0 when the
// scratch memory could not be allocated.
static int run_attn(AttnJob *all, int backward, int B) {
  const int parts = cpu_parts(B, 1);
  AttnRun r = {all, backward, NULL};
  if (backward) {
    r.scratch = (float *)malloc(sizeof(float) * (size_t)all->T * all->T * (size_t)parts);
    if (!r.scratch) return 0;
  }
  run_parts(B, parts, attn_part, &r);
  free(r.scratch);
  return 1;
}

// attention(heap, forward: 1|0, offsets Float64Array, dims Int32Array [B, T, H, KV, hd], scale)
// forward offsets: q, k, v, mask, out, probs; backward: q, k, v, probs, dout, dq, dk, dv.
static napi_value Attention(napi_env env, napi_callback_info info) {
  size_t argc = 5;
  napi_value argv[5];
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  void *heapP, *offP, *dimP;
  size_t heapLen, offLen, dimLen, bo;
  napi_typedarray_type tt;
  napi_value ab;
  int32_t fwd;
  double scaleD;
  if (argc != 5 || napi_get_arraybuffer_info(env, argv[0], &heapP, &heapLen) != napi_ok ||
      napi_get_value_int32(env, argv[1], &fwd) != napi_ok ||
      napi_get_typedarray_info(env, argv[2], &tt, &offLen, &offP, &ab, &bo) != napi_ok || tt != napi_float64_array ||
      napi_get_typedarray_info(env, argv[3], &tt, &dimLen, &dimP, &ab, &bo) != napi_ok || tt != napi_int32_array || dimLen != 5 ||
      napi_get_value_double(env, argv[4], &scaleD) != napi_ok) {
    napi_throw_type_error(env, NULL, "attention expects (heap, forward, offsets Float64Array, dims Int32Array(5), scale)");
    return NULL;
  }
  const int32_t *d = (const int32_t *)dimP;
  const int B = d[0], T = d[1], H = d[2], KV = d[3], hd = d[4];
  const double *o = (const double *)offP;
  if (B <= 0 || T <= 0 || H <= 0 || KV <= 0 || hd <= 0 || H % KV || offLen != (size_t)(fwd ? 6 : 8)) {
    napi_throw_range_error(env, NULL, "attention: inconsistent sizes");
    return NULL;
  }
  const int64_t hLenF = (int64_t)(heapLen / 4);
  const int64_t nq = (int64_t)B * T * H * hd, nk = (int64_t)B * T * KV * hd, np = (int64_t)B * H * T * T;
  int64_t sizes[8];
  if (fwd) { sizes[0] = nq; sizes[1] = nk; sizes[2] = nk; sizes[3] = (int64_t)B * T; sizes[4] = nq; sizes[5] = np; }
  else { sizes[0] = nq; sizes[1] = nk; sizes[2] = nk; sizes[3] = np; sizes[4] = nq; sizes[5] = nq; sizes[6] = nk; sizes[7] = nk; }
  for (size_t i = 0; i < offLen; i++)
    if (!IN_HEAP(o[i], sizes[i])) {
      napi_throw_range_error(env, NULL, "attention: a tensor lies outside the heap");
      return NULL;
    }
  float *hp = (float *)heapP;
  AttnJob job = {0};
  job.b0 = 0; job.b1 = B; job.T = T; job.H = H; job.KV = KV; job.hd = hd; job.scale = (float)scaleD;
  job.q = HP(o[0]); job.k = HP(o[1]); job.v = HP(o[2]);
  if (fwd) {
    job.mask = HP(o[3]); job.out = HP(o[4]); job.probs = HP(o[5]);
  } else {
    job.probs = HP(o[3]); job.dout = HP(o[4]); job.dq = HP(o[5]); job.dk = HP(o[6]); job.dv = HP(o[7]);
  }
  if (!run_attn(&job, !fwd, B)) napi_throw_error(env, NULL, "attention: out of memory");
  return NULL;
}

// ---- Fused row-wise ops with their gradients: RMSNorm, SwiGLU, token log-prob ----
// pointwise(heap, op, offsets Float64Array, dims Int32Array(2) [rows, cols], scalar)
//   0 rmsnorm forward  [x, w, y]              y = x / sqrt(mean(x^2) + eps) * w      (scalar = eps)
//   1 rmsnorm backward [x, w, dy, dx, dw]
//   2 swiglu forward   [g, u, out]            out = g * sigmoid(g) * u              (rows x cols)
//   3 swiglu backward  [g, u, dy, dg, du]
//   4 logprob forward  [logits, targets, out] out[r] = logits[r, t_r] - logsumexp(logits[r])
//   5 logprob backward [logits, targets, dy, dlogits]  dlogits = dy * (onehot(t) - softmax)
//   6 embed forward    [table, ids, out]       out[r] = table[ids[r]]  (rows = ids, cols = D, scalar = V)
//   7 embed backward   [ids, dy, dtable]       dtable = sum of dy rows into their ids' rows
typedef struct {
  int op;
  const double *o;
  float *hp;
  int64_t R, Cn;
  float eps;
  int64_t V;
  float *dwParts;
} PwCtx;

// One part of a pointwise op: rows [lo, hi) (elements for SwiGLU, ops 2 and 3).
static void pw_part(void *ctxp, int64_t lo, int64_t hi, int part) {
  const PwCtx *c = (const PwCtx *)ctxp;
  const int op = c->op;
  const double *o = c->o;
  float *hp = c->hp;
  const int64_t Cn = c->Cn;
  const float eps = c->eps;
  if (op == 0 || op == 1) {
    const float *x = HP(o[0]), *w = HP(o[1]);
    float *dw = op == 1 ? c->dwParts + (int64_t)part * Cn : NULL;
    for (int64_t r = lo; r < hi; r++) {
      const float *xr = x + r * Cn;
      float ss = 0.0f;
      for (int64_t k = 0; k < Cn; k++) ss += xr[k] * xr[k];
      const float inv = 1.0f / sqrtf(ss / (float)Cn + eps);
      if (op == 0) {
        float *y = HP(o[2]) + r * Cn;
        for (int64_t k = 0; k < Cn; k++) y[k] = xr[k] * inv * w[k];
      } else {
        const float *dy = HP(o[2]) + r * Cn;
        float *dx = HP(o[3]) + r * Cn;
        float dot = 0.0f;
        for (int64_t k = 0; k < Cn; k++) {
          dot += dy[k] * w[k] * xr[k];
          dw[k] += dy[k] * xr[k] * inv;
        }
        const float kk = inv * inv * inv * dot / (float)Cn;
        for (int64_t k = 0; k < Cn; k++) dx[k] = inv * dy[k] * w[k] - xr[k] * kk;
      }
    }
  } else if (op == 2 || op == 3) {
    const float *g = HP(o[0]), *u = HP(o[1]);
    if (op == 2) {
      float *out = HP(o[2]);
#pragma omp simd
      for (int64_t i = lo; i < hi; i++) out[i] = g[i] / (1.0f + exp_v(-g[i])) * u[i];
    } else {
      const float *dy = HP(o[2]);
      float *dg = HP(o[3]), *du = HP(o[4]);
#pragma omp simd
      for (int64_t i = lo; i < hi; i++) {
        const float sg = 1.0f / (1.0f + exp_v(-g[i]));
        du[i] = dy[i] * g[i] * sg;
        dg[i] = dy[i] * u[i] * sg * (1.0f + g[i] * (1.0f - sg));
      }
    }
  } else if (op == 6) {
    const int32_t *ids = (const int32_t *)HP(o[1]);
    const float *table = HP(o[0]);
    float *out = HP(o[2]);
    for (int64_t r = lo; r < hi; r++) memcpy(out + r * Cn, table + (int64_t)ids[r] * Cn, sizeof(float) * (size_t)Cn);
  } else if (op == 7) {
    // One part only (rows of the same id add into one table row).
    const int32_t *ids = (const int32_t *)HP(o[0]);
    const float *dy = HP(o[1]);
    float *dt = HP(o[2]);
    if (lo == 0) memset(dt, 0, sizeof(float) * (size_t)(c->V * Cn));
    for (int64_t r = lo; r < hi; r++) {
      float *row = dt + (int64_t)ids[r] * Cn;
      const float *src = dy + r * Cn;
      for (int64_t k = 0; k < Cn; k++) row[k] += src[k];
    }
  } else {
    const float *lg = HP(o[0]);
    const int32_t *tg = (const int32_t *)HP(o[1]);
    for (int64_t r = lo; r < hi; r++) {
      const float *row = lg + r * Cn;
      float mx = row[0];
      for (int64_t k = 1; k < Cn; k++) if (row[k] > mx) mx = row[k];
      // Summed in double: over a 150k vocabulary of peaked logits, float drops the many tiny terms
      // (each below half an ulp of the sum) and the log-probs came out ~2e-4 too high.
      double sum = 0.0;
#pragma omp simd reduction(+ : sum)
      for (int64_t k = 0; k < Cn; k++) sum += exp_v(row[k] - mx);
      const float lse = mx + (float)log(sum);
      if (op == 4) {
        HP(o[2])[r] = row[tg[r]] - lse;
      } else {
        const float dy = HP(o[2])[r];
        float *dl = HP(o[3]) + r * Cn;
#pragma omp simd
        for (int64_t k = 0; k < Cn; k++) dl[k] = -dy * exp_v(row[k] - lse);
        dl[tg[r]] += dy;
      }
    }
  }
}

static napi_value Pointwise(napi_env env, napi_callback_info info) {
  size_t argc = 5;
  napi_value argv[5];
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  void *heapP, *offP, *dimP;
  size_t heapLen, offLen, dimLen, bo;
  napi_typedarray_type tt;
  napi_value ab;
  int32_t op;
  double scalar;
  if (argc != 5 || napi_get_arraybuffer_info(env, argv[0], &heapP, &heapLen) != napi_ok ||
      napi_get_value_int32(env, argv[1], &op) != napi_ok ||
      napi_get_typedarray_info(env, argv[2], &tt, &offLen, &offP, &ab, &bo) != napi_ok || tt != napi_float64_array ||
      napi_get_typedarray_info(env, argv[3], &tt, &dimLen, &dimP, &ab, &bo) != napi_ok || tt != napi_int32_array || dimLen != 2 ||
      napi_get_value_double(env, argv[4], &scalar) != napi_ok) {
    napi_throw_type_error(env, NULL, "pointwise expects (heap, op, offsets Float64Array, dims Int32Array(2), scalar)");
    return NULL;
  }
  const int32_t *d = (const int32_t *)dimP;
  const int64_t R = d[0], Cn = d[1], n = R * Cn;
  static const int nOffs[8] = {3, 5, 3, 5, 3, 4, 3, 3};
  if (op < 0 || op > 7 || R < 0 || Cn <= 0 || offLen != (size_t)nOffs[op]) {
    napi_throw_range_error(env, NULL, "pointwise: unknown op or inconsistent sizes");
    return NULL;
  }
  int64_t sizes[5];
  switch (op) {
    case 0: sizes[0] = n; sizes[1] = Cn; sizes[2] = n; break;
    case 1: sizes[0] = n; sizes[1] = Cn; sizes[2] = n; sizes[3] = n; sizes[4] = Cn; break;
    case 2: sizes[0] = n; sizes[1] = n; sizes[2] = n; break;
    case 3: for (int i = 0; i < 5; i++) sizes[i] = n; break;
    case 4: sizes[0] = n; sizes[1] = R; sizes[2] = R; break;
    case 5: sizes[0] = n; sizes[1] = R; sizes[2] = R; sizes[3] = n; break;
    case 6: sizes[0] = (int64_t)scalar * Cn; sizes[1] = R; sizes[2] = n; break;
    default: sizes[0] = R; sizes[1] = n; sizes[2] = (int64_t)scalar * Cn; break;
  }
  const double *o = (const double *)offP;
  const int64_t hLenF = (int64_t)(heapLen / 4);
  for (size_t i = 0; i < offLen; i++)
    if (!IN_HEAP(o[i], sizes[i])) {
      napi_throw_range_error(env, NULL, "pointwise: a tensor lies outside the heap");
      return NULL;
    }
  float *hp = (float *)heapP;
  if (op == 6 || op == 7) {
    const int64_t V = (int64_t)scalar;
    const int32_t *ids = (const int32_t *)HP(op == 6 ? o[1] : o[0]);
    for (int64_t r = 0; r < R; r++)
      if (ids[r] < 0 || ids[r] >= V) {
        napi_throw_range_error(env, NULL, "pointwise: a token id is outside the table");
        return NULL;
      }
  } else if (op == 4 || op == 5) {
    const int32_t *tg = (const int32_t *)HP(o[1]);
    for (int64_t r = 0; r < R; r++)
      if (tg[r] < 0 || tg[r] >= Cn) {
        napi_throw_range_error(env, NULL, "pointwise: a target id is outside the vocabulary");
        return NULL;
      }
  }
  PwCtx c = {op, o, hp, R, Cn, (float)scalar, (int64_t)scalar, NULL};
  // Rows (or elements, for SwiGLU) split over the cores; the embedding's gradient adds rows of the
  // same token id together, so it stays on one thread.
  const int elementwise = op == 2 || op == 3;
  const int64_t items = elementwise ? n : R;
  const int parts = op == 7 ? 1 : cpu_parts(items, elementwise ? 32768 : (32768 + Cn - 1) / Cn);
  if (op == 1) {
    // RMSNorm's weight gradient sums over rows: one partial sum per part, added in part order.
    c.dwParts = (float *)calloc((size_t)parts * (size_t)Cn, sizeof(float));
    if (!c.dwParts) {
      napi_throw_error(env, NULL, "pointwise: out of memory for the weight gradient's partial sums");
      return NULL;
    }
  }
  run_parts(items, parts, pw_part, &c);
  if (op == 1) {
    float *dw = HP(o[4]);
    for (int64_t k = 0; k < Cn; k++) dw[k] = 0.0f;
    for (int i = 0; i < parts; i++)
      for (int64_t k = 0; k < Cn; k++) dw[k] += c.dwParts[(int64_t)i * Cn + k];
    free(c.dwParts);
  }
  return NULL;
}

typedef struct {
  const float *x, *g, *m, *v;
  float *xo, *mo, *vo;
  float lr, b1, b2, eps, wd, bc1, bc2;
} AdamCtx;

// ---- Rotary embeddings for training, forward and backward ----
// rope(heap, offsets [x, cos, sin, out], dims Int32Array [R, T, n, hd, pos, maxLen], sign)
// x and out are R rows of n heads of hd (rotate-half layout); row r sits at position pos + r % T, so
// [B, T, heads, hd] is R = B*T, n = heads and [B, heads, T, hd] is R = B*heads, n = 1. cos and sin
// are the model's tables [maxLen, hd]. sign -1 applies the inverse rotation: the gradient in x. It
// replaces a product with a [hd, hd] rotation matrix (and that product's gradients) and three
// elementwise kernels per use.
typedef struct {
  const float *x, *cos, *sin;
  float *out;
  int T, n, hd, pos;
  float sign;
} RopeCtx;

static void rope_part(void *ctxp, int64_t lo, int64_t hi, int part) {
  (void)part;
  const RopeCtx *c = (const RopeCtx *)ctxp;
  const int half = c->hd / 2;
  for (int64_t r = lo; r < hi; r++) {
    const int64_t p = c->pos + r % c->T;
    const float *cp = c->cos + p * c->hd, *sp = c->sin + p * c->hd;
    for (int h = 0; h < c->n; h++) {
      const float *v = c->x + (r * c->n + h) * c->hd;
      float *o = c->out + (r * c->n + h) * c->hd;
      for (int i = 0; i < half; i++) {
        const float a = v[i], b = v[i + half];
        o[i] = a * cp[i] - c->sign * b * sp[i];
        o[i + half] = b * cp[i + half] + c->sign * a * sp[i + half];
      }
    }
  }
}

static napi_value Rope(napi_env env, napi_callback_info info) {
  size_t argc = 4;
  napi_value argv[4];
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  void *heapP, *offP, *dimP;
  size_t heapLen, offLen, dimLen, bo;
  napi_typedarray_type tt;
  napi_value ab;
  double sign;
  if (argc != 4 || napi_get_arraybuffer_info(env, argv[0], &heapP, &heapLen) != napi_ok ||
      napi_get_typedarray_info(env, argv[1], &tt, &offLen, &offP, &ab, &bo) != napi_ok || tt != napi_float64_array || offLen != 4 ||
      napi_get_typedarray_info(env, argv[2], &tt, &dimLen, &dimP, &ab, &bo) != napi_ok || tt != napi_int32_array || dimLen != 6 ||
      napi_get_value_double(env, argv[3], &sign) != napi_ok) {
    napi_throw_type_error(env, NULL, "rope expects (heap, offsets Float64Array(4), dims Int32Array(6), sign)");
    return NULL;
  }
  const int32_t *d = (const int32_t *)dimP;
  const int64_t R = d[0];
  const int T = d[1], n = d[2], hd = d[3], pos = d[4], maxLen = d[5];
  if (R < 0 || T <= 0 || n <= 0 || hd <= 0 || hd % 2 || pos < 0 || maxLen <= 0 || (R > 0 && pos + (R < T ? R : T) > maxLen) ||
      (sign != 1.0 && sign != -1.0)) {
    napi_throw_range_error(env, NULL, "rope: inconsistent sizes (positions past the table, odd head size or sign not +-1)");
    return NULL;
  }
  const double *o = (const double *)offP;
  const int64_t hLenF = (int64_t)(heapLen / 4), nx = R * n * hd, nt = (int64_t)maxLen * hd;
  if (!IN_HEAP(o[0], nx) || !IN_HEAP(o[1], nt) || !IN_HEAP(o[2], nt) || !IN_HEAP(o[3], nx)) {
    napi_throw_range_error(env, NULL, "rope: a tensor lies outside the heap");
    return NULL;
  }
  float *hp = (float *)heapP;
  RopeCtx c = {HP(o[0]), HP(o[1]), HP(o[2]), HP(o[3]), T, n, hd, pos, (float)sign};
  run_parts(R, cpu_parts(R * n * hd, 65536), rope_part, &c);
  return NULL;
}

static void adam_part(void *ctxp, int64_t lo, int64_t hi, int part) {
  (void)part;
  const AdamCtx *c = (const AdamCtx *)ctxp;
  for (int64_t i = lo; i < hi; i++) {
    const float m2 = c->m[i] * c->b1 + c->g[i] * (1.0f - c->b1);
    const float v2 = c->v[i] * c->b2 + c->g[i] * c->g[i] * (1.0f - c->b2);
    c->mo[i] = m2;
    c->vo[i] = v2;
    const float upd = (m2 / c->bc1) / (sqrtf(v2 / c->bc2) + c->eps) + c->wd * c->x[i];
    c->xo[i] = c->x[i] - c->lr * upd;
  }
}

// ---- AdamW update of one parameter: new x, m, v written to fresh buffers (tensors are immutable) ----
// adamw(heap, offsets Float64Array [x, g, m, v, xOut, mOut, vOut], n, params Float64Array
//       [lr, beta1, beta2, eps, weightDecay, biasCorrection1, biasCorrection2])
static napi_value AdamW(napi_env env, napi_callback_info info) {
  size_t argc = 4;
  napi_value argv[4];
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  void *heapP, *offP, *parP;
  size_t heapLen, offLen, parLen, bo;
  napi_typedarray_type tt;
  napi_value ab;
  int64_t n;
  if (argc != 4 || napi_get_arraybuffer_info(env, argv[0], &heapP, &heapLen) != napi_ok ||
      napi_get_typedarray_info(env, argv[1], &tt, &offLen, &offP, &ab, &bo) != napi_ok || tt != napi_float64_array || offLen != 7 ||
      napi_get_value_int64(env, argv[2], &n) != napi_ok ||
      napi_get_typedarray_info(env, argv[3], &tt, &parLen, &parP, &ab, &bo) != napi_ok || tt != napi_float64_array || parLen != 7 || n < 0) {
    napi_throw_type_error(env, NULL, "adamw expects (heap, offsets Float64Array(7), n, params Float64Array(7))");
    return NULL;
  }
  const double *o = (const double *)offP, *p = (const double *)parP;
  const int64_t hLenF = (int64_t)(heapLen / 4);
  for (int i = 0; i < 7; i++)
    if (!IN_HEAP(o[i], n)) {
      napi_throw_range_error(env, NULL, "adamw: a tensor lies outside the heap");
      return NULL;
    }
  float *hp = (float *)heapP;
  const float *x = HP(o[0]), *g = HP(o[1]), *m = HP(o[2]), *v = HP(o[3]);
  float *xo = HP(o[4]), *mo = HP(o[5]), *vo = HP(o[6]);
  const float lr = (float)p[0], b1 = (float)p[1], b2 = (float)p[2], eps = (float)p[3], wd = (float)p[4];
  const float bc1 = (float)p[5], bc2 = (float)p[6];
  AdamCtx c = {x, g, m, v, xo, mo, vo, lr, b1, b2, eps, wd, bc1, bc2};
  run_parts(n, cpu_parts(n, 65536), adam_part, &c);
  return NULL;
}

// ---- Products across buffers: frozen weights kept outside the wasm heap (backend/model/external-weights.ts) ----
// sgemmExt(aBuf, aByteOff, bBuf, bByteOff, cBuf, cByteOff, M, N, K, transA, transB[, alpha, beta]):
// C = alpha op(A) @ op(B) + beta C (alpha 1, beta 0 when left out; beta 1 accumulates a LoRA term
// into the frozen product), row-major and contiguous, where each matrix may lie in a different ArrayBuffer
// (activations on the wasm heap, a frozen weight in a Node buffer). One product, BLAS-threaded.
static int ext_matrix(napi_env env, napi_value buf, napi_value off, int64_t n, float **out) {
  void *base = NULL;
  size_t len = 0;
  int64_t o = 0;
  if (napi_get_arraybuffer_info(env, buf, &base, &len) != napi_ok || napi_get_value_int64(env, off, &o) != napi_ok) return 0;
  if (o < 0 || o % 4 != 0 || n < 0 || o / 4 + n > (int64_t)(len / 4)) return -1;
  *out = (float *)base + o / 4;
  return 1;
}

static napi_value SgemmExt(napi_env env, napi_callback_info info) {
  size_t argc = 13;
  napi_value argv[13];
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  if (argc != 11 && argc != 13) { napi_throw_type_error(env, NULL, "sgemmExt expects 11 or 13 arguments"); return NULL; }
  double alpha = 1.0, beta = 0.0;
  if (argc == 13 && (napi_get_value_double(env, argv[11], &alpha) != napi_ok || napi_get_value_double(env, argv[12], &beta) != napi_ok)) {
    napi_throw_type_error(env, NULL, "sgemmExt: alpha and beta must be numbers");
    return NULL;
  }
  int ok = 1;
  int64_t M = arg_i64(env, argv[6], &ok), N = arg_i64(env, argv[7], &ok), K = arg_i64(env, argv[8], &ok);
  int64_t tA = arg_i64(env, argv[9], &ok), tB = arg_i64(env, argv[10], &ok);
  if (!ok || M < 0 || N < 0 || K < 0 || M > INT32_MAX || N > INT32_MAX || K > INT32_MAX) {
    napi_throw_type_error(env, NULL, "sgemmExt: M, N, K, transA, transB must be non-negative integers");
    return NULL;
  }
  float *A = NULL, *B = NULL, *C = NULL;
  int ra = ext_matrix(env, argv[0], argv[1], M * K, &A), rb = ext_matrix(env, argv[2], argv[3], K * N, &B), rc = ext_matrix(env, argv[4], argv[5], M * N, &C);
  if (!ra || !rb || !rc) { napi_throw_type_error(env, NULL, "sgemmExt: buffers must be ArrayBuffers and offsets integers"); return NULL; }
  if (ra < 0 || rb < 0 || rc < 0) { napi_throw_range_error(env, NULL, "sgemmExt: unaligned offset or a matrix exceeds its buffer"); return NULL; }
  if (M == 0 || N == 0) return NULL;
  if (K == 0) {
    if (beta == 0.0) memset(C, 0, (size_t)(M * N) * sizeof(float));
    else for (int64_t i = 0; i < M * N; i++) C[i] *= (float)beta;
    return NULL;
  }
  cblas_sgemm(RowMajor, tA ? Trans : NoTrans, tB ? Trans : NoTrans, (int)M, (int)N, (int)K, (float)alpha, A, tA ? (int)M : (int)K, B,
              tB ? (int)K : (int)N, (float)beta, C, (int)N);
  return NULL;
}

// The kernel family OpenBLAS picked for this CPU (DYNAMIC_ARCH builds choose at load): it decides the
// summation order and speed of every product, so the engine's log line and CI name it. null elsewhere.
static napi_value BlasCore(napi_env env, napi_callback_info info) {
  (void)info;
  napi_value out;
  const char *name = openblas_get_corename ? openblas_get_corename() : NULL;
  if (name ? napi_create_string_utf8(env, name, NAPI_AUTO_LENGTH, &out) != napi_ok : napi_get_null(env, &out) != napi_ok) return NULL;
  return out;
}

static napi_value Init(napi_env env, napi_value exports) {
  napi_value fn;
  if (napi_create_function(env, "blasCore", NAPI_AUTO_LENGTH, BlasCore, NULL, &fn) != napi_ok) return NULL;
  if (napi_set_named_property(env, exports, "blasCore", fn) != napi_ok) return NULL;
  if (napi_create_function(env, "sgemm", NAPI_AUTO_LENGTH, Sgemm, NULL, &fn) != napi_ok) return NULL;
  if (napi_set_named_property(env, exports, "sgemm", fn) != napi_ok) return NULL;
  if (napi_create_function(env, "decode", NAPI_AUTO_LENGTH, Decode, NULL, &fn) != napi_ok) return NULL;
  if (napi_set_named_property(env, exports, "decode", fn) != napi_ok) return NULL;
  if (napi_create_function(env, "attention", NAPI_AUTO_LENGTH, Attention, NULL, &fn) != napi_ok) return NULL;
  if (napi_set_named_property(env, exports, "attention", fn) != napi_ok) return NULL;
  if (napi_create_function(env, "pointwise", NAPI_AUTO_LENGTH, Pointwise, NULL, &fn) != napi_ok) return NULL;
  if (napi_set_named_property(env, exports, "pointwise", fn) != napi_ok) return NULL;
  if (napi_create_function(env, "rope", NAPI_AUTO_LENGTH, Rope, NULL, &fn) != napi_ok) return NULL;
  if (napi_set_named_property(env, exports, "rope", fn) != napi_ok) return NULL;
  if (napi_create_function(env, "adamw", NAPI_AUTO_LENGTH, AdamW, NULL, &fn) != napi_ok) return NULL;
  if (napi_set_named_property(env, exports, "adamw", fn) != napi_ok) return NULL;
  if (napi_create_function(env, "sgemmExt", NAPI_AUTO_LENGTH, SgemmExt, NULL, &fn) != napi_ok) return NULL;
  if (napi_set_named_property(env, exports, "sgemmExt", fn) != napi_ok) return NULL;
  // decode takes weights outside the heap (its 8th argument): older builds lack this flag.
  napi_value yes;
  if (napi_get_boolean(env, 1, &yes) != napi_ok) return NULL;
  if (napi_set_named_property(env, exports, "decodeExternal", yes) != napi_ok) return NULL;
  // decode adds q/k/v biases (Qwen2) given in 3 more slots per layer at the end of `off`: older builds lack this flag.
  if (napi_set_named_property(env, exports, "decodeBias", yes) != napi_ok) return NULL;
  return exports;
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, Init)
