/* SPDX-License-Identifier: MIT */
/*
 * tests/cts/test_cts_transformer.c: the forward layers of a GPT-2 block
 * (examples/transformer/transformer_kernels.h) against the plain C reference
 * (transformer_ref.h) at small shapes, on every driver (make test runs the
 * cts_ tests on the threaded, deterministic and inline drivers, and on the
 * CUDA driver in a CUDA=1 build): every layer with the CPU plan (a unit per
 * row), the GPU plan (a unit per line, large cubes) and odd cube sizes; the
 * same under the kernel race checker (RACECHECK: no report, every declared
 * bound verified as in VALIDATE); the matmul at shapes that are not
 * multiples of its tile. transformer_* (once, on the CPU): every plane size,
 * and tk_expf / tk_tanhf against the C library.
 */
#include <math.h>
#include <string.h>

#include "cts.h"
#if !CUBERT_CTS_INLINE_ONLY
#include "cubert/cpu.h"
#include "cubert/os.h"
#endif
#include "transformer_host.h"

/* B=2 T=13 C=128 NH=2: partial matmul tiles (26 rows), a partial last query
 * block, V=1001 (the line holding V is partial) padded to 1024. */
static tf_shape_t small_shape(void) {
  tf_shape_t s = {2, 13, 128, 2, 1001, 1024};
  return s;
}

/* The race checker's and the plane sizes' runs (every access is a shadow-table
 * update there; valgrind runs these tests too): B=1 T=9 C=128 NH=2, V=61 of 64. */
static tf_shape_t tiny_shape(void) {
  tf_shape_t s = {1, 9, 128, 2, 61, 64};
  return s;
}

/* Every layer on env's device with `plan`, each against its reference;
 * the references run once (ran != 0 after the first call). */
static void run_layers(cubert_client_t *client, tf_data_t *d, const tf_plan_t *plan, int *ran) {
  int l;
  for (l = 0; l < TF_LAYERS; l++) {
    cubert_error_t e;
    cubert_status_t st;
    double worst;
    size_t at, bad;
    if (!d->out_len[l]) continue; /* the head, when the data have none */
    if (!*ran) tf_layer_reference(d, l);
    CHECK_OK(tf_layer_launch(d, plan, l, &e));
    st = cubert_client_sync(client, &e);
    CHECK_MSG(st == CUBERT_STATUS_OK, "plan %s, %s: %s (%s)", plan->name, tf_layer_names[l],
              cubert_status_name(st), e.reason);
    bad = tf_layer_compare(d, l, &worst, &at, &st, &e);
    CHECK_OK(st);
    CHECK_MSG(bad == 0, "plan %s, %s: %zu mismatches, worst %g x tolerance at %zu: %g vs %g",
              plan->name, tf_layer_names[l], bad, worst, at, (double)d->out[l][at],
              (double)d->ref[l][at]);
  }
  *ran = 1;
  { /* layernorm's mean and rstd too */
    size_t i, n = (size_t)d->s.B * d->s.T;
    CHECK_OK(cubert_client_read_one(client, &d->h_mean, d->mean, n * sizeof(float), NULL));
    CHECK_OK(cubert_client_read_one(client, &d->h_rstd, d->rstd, n * sizeof(float), NULL));
    for (i = 0; i < n; i++) {
      CHECK_MSG(fabs(d->mean[i] - d->ref_mean[i]) <= 1e-5 + 1e-5 * fabs(d->ref_mean[i]),
                "plan %s: mean[%zu] %g vs %g", plan->name, i, (double)d->mean[i], (double)d->ref_mean[i]);
      CHECK_MSG(fabs(d->rstd[i] - d->ref_rstd[i]) <= 1e-4 * fabs(d->ref_rstd[i]),
                "plan %s: rstd[%zu] %g vs %g", plan->name, i, (double)d->rstd[i], (double)d->ref_rstd[i]);
    }
  }
}

static void layers_on(const cts_options_t *options, tf_shape_t shape) {
  cts_env_t env;
  tf_data_t d;
  tf_plan_t plans[4];
  int p, ran = 0;
  plans[0] = tf_plan_cpu();
  plans[1] = tf_plan_gpu();
  plans[2] = tf_plan_odd();
  plans[3] = tf_plan_gpu_online();
  if (options)
    cts_setup_with(&env, options);
  else
    cts_setup(&env, 0);
  CHECK(tf_data_init(&d, shape, 1) == 0);
  CHECK_OK(tf_data_upload(&d, env.client, NULL));
  for (p = 0; p < 4; p++) run_layers(env.client, &d, &plans[p], &ran);
  { /* the whole block (ten launches, one sync) with the CPU and the GPU plans, launched, then
     * recorded once and replayed */
    tf_block_t k;
    double worst;
    cubert_status_t st;
    CHECK(tf_block_init(&k, &d) == 0);
    CHECK_OK(tf_block_upload(&k, &d, NULL));
    tf_block_reference(&k, &d);
    for (p = 0; p < 2; p++) {
      size_t n = k.act_len[TF_B_OUT], i, differ = 0;
      float *launched = (float *)malloc(n * sizeof(float));
      cubert_recording_t *rec = NULL;
      CHECK(launched != NULL);
      CHECK_OK(tf_block_launch(&k, &d, &plans[p], NULL));
      CHECK_EQ_U64(tf_block_compare(&k, &d, &worst, &st, NULL), 0);
      CHECK_OK(st);
      CHECK_MSG(worst <= 1.0, "plan %s: block worst %g x tolerance", plans[p].name, worst);
      /* the same block recorded once and replayed (twice): the same bytes out */
      memcpy(launched, k.out, n * sizeof(float));
      CHECK_OK(tf_block_record(&k, &d, &plans[p], &rec, NULL));
      for (i = 0; i < 2; i++) {
        memset(k.out, 0xff, n * sizeof(float)); /* NaNs: a replay that did not run shows */
        CHECK_OK(cubert_client_write(env.client, &k.h_act[TF_B_OUT], k.out, n * sizeof(float), NULL));
        CHECK_OK(cubert_client_replay(env.client, rec, NULL));
        CHECK_OK(cubert_client_sync(env.client, NULL));
        CHECK_EQ_U64(tf_block_compare(&k, &d, &worst, &st, NULL), 0);
        CHECK_OK(st);
      }
      /* byte for byte unless the plan splits its matmuls over k: their cubes add partial
       * sums atomically in no fixed order (the last bits move run to run; the reference
       * check above holds either way) */
      if (plans[p].matmul_waves == 0) {
        for (i = 0; i < n; i++) differ += memcmp(&launched[i], &k.out[i], sizeof(float)) != 0;
        CHECK_MSG(differ == 0, "plan %s: %zu of %zu values of the replayed block differ from the launched one",
                  plans[p].name, differ, n);
      }
      cubert_recording_destroy(rec);
      free(launched);
    }
    tf_block_free(&k, &d);
  }
  tf_data_free(&d);
  cts_teardown(&env);
}

TEST(cts_transformer_layers_match_reference) {
  TEST_SKIP_IF_EMBEDDED("the layers' data take ~2 MiB");
  layers_on(NULL, small_shape());
}

/* RACECHECK: no two units of a phase and no two cubes touch one element with
 * a write, uniform code writes nothing, no plane operation sits in a phase;
 * and every access stays below the declared cube bounds (as in VALIDATE).
 * Any report fails the sync (SERVER_UNHEALTHY, with the report's text). */
TEST(cts_transformer_layers_racecheck_clean) {
  cts_options_t o;
  TEST_SKIP_IF_EMBEDDED("the layers' data take ~0.5 MiB");
  memset(&o, 0, sizeof o);
  o.bounds_check = CUBERT_BOUNDS_CHECK_RACECHECK;
  layers_on(&o, tiny_shape());
}

/* The matmul where no dimension is a multiple of its tile (m 37, k 20, n 70),
 * and where one is smaller than a tile in every direction (m 3, k 4, n 5). */
TEST(cts_transformer_matmul_partial_tiles) {
  static const uint32_t shapes[3][3] = {{37, 20, 70}, {3, 4, 5}, {130, 36, 136}};
  static const uint32_t splits[2] = {1, 3};
  static float inp[130 * 36], w[136 * 36], bias[136], out[130 * 136], ref[130 * 136];
  cts_env_t env;
  tf_plan_t plans[2];
  uint32_t c, tile, sp;
  plans[0] = tf_plan_cpu(); /* CHECKED */
  plans[1] = tf_plan_gpu(); /* launch_unchecked */
  cts_setup(&env, 0);
  for (tile = 0; tile < TF_MM_TILES; tile++)
    for (sp = 0; sp < 2; sp++)
      for (c = 0; c < 6; c++) {
        const tf_plan_t plan = plans[c / 3];
        const uint32_t m = shapes[c % 3][0], k = shapes[c % 3][1], n = shapes[c % 3][2];
        cubert_handle_t h[4];
        uint32_t i;
        for (i = 0; i < m * k; i++) inp[i] = (float)((i * 7u) % 13u) - 6.0f;
        for (i = 0; i < n * k; i++) w[i] = (float)((i * 5u) % 11u) * 0.25f - 1.0f;
        for (i = 0; i < n; i++) bias[i] = (float)i * 0.5f;
        for (i = 0; i < m * n; i++) out[i] = -1.0f;
        tf_ref_matmul(ref, inp, w, bias, 1, (int)m, (int)k, (int)n);
        CHECK_OK(cubert_client_create_from_slice(env.client, inp, m * k * sizeof(float), &h[0], NULL));
        CHECK_OK(cubert_client_create_from_slice(env.client, w, n * k * sizeof(float), &h[1], NULL));
        CHECK_OK(cubert_client_create_from_slice(env.client, bias, n * sizeof(float), &h[2], NULL));
        CHECK_OK(cubert_client_create_from_slice(env.client, out, m * n * sizeof(float), &h[3], NULL));
        CHECK_OK(tf_matmul_tiled(env.client, &plan, tile, splits[sp], &h[3], &h[0], &h[1], &h[2], m, k, n,
                                 NULL));
        CHECK_OK(cubert_client_read_one(env.client, &h[3], out, m * n * sizeof(float), NULL));
        for (i = 0; i < m * n; i++) /* small integers and quarters: exact in every order */
          if (out[i] != ref[i]) {
            CHECK_MSG(0, "tile %s, %u split(s), %ux%ux%u: out[%u] = %g, want %g", tf_mm_tiles[tile].name,
                      (unsigned)splits[sp], (unsigned)m, (unsigned)k, (unsigned)n, (unsigned)i,
                      (double)out[i], (double)ref[i]);
            break;
          }
        for (i = 0; i < 4; i++) CHECK_OK(cubert_client_handle_release(env.client, &h[i], NULL));
      }
  cts_teardown(&env);
}

/* ---- on the CPU only -------------------------------------------------------------------- */

/* Every plane size the CPU drivers take (a kernel that assumes planes of 32
 * would fail here): the GPU plan's cubes of 192 and 1024 units and the odd
 * plan's 37, with planes of 1 to 64, under RACECHECK. */
TEST(transformer_every_plane_size) {
#if CUBERT_CTS_INLINE_ONLY
  CTS_REQUIRE_HOST("the CPU driver");
#else
  static const uint32_t planes[] = {1, 2, 4, 8, 16, 64};
  tf_plan_t plans[2];
  tf_data_t d;
  size_t i;
  int p, ran = 0;
  TEST_SKIP_IF_EMBEDDED("the layers' data take ~2 MiB");
  plans[0] = tf_plan_gpu();
  plans[1] = tf_plan_odd();
  CHECK(tf_data_init(&d, tiny_shape(), 0) == 0);
  for (i = 0; i < sizeof planes / sizeof planes[0]; i++) {
    counting_allocator_t c;
    cubert_allocator_t a = counting_allocator_initialize(&c);
    cubert_cpu_options_t o;
    cubert_client_t *client = NULL;
    cubert_cpu_options_initialize(&o);
    o.ignore_environment = 1;
    o.plane_dim = planes[i];
    o.workers = 2;
    o.device.bounds_check = CUBERT_BOUNDS_CHECK_RACECHECK;
    CHECK_OK(cubert_cpu_client_create(a, &o, &client, NULL));
    CHECK_OK(tf_data_upload(&d, client, NULL));
    for (p = 0; p < 2; p++) run_layers(client, &d, &plans[p], &ran);
    tf_data_release_device(&d); /* the host data stay for the next device */
    cubert_client_release(client);
    CHECK_EQ_I64(c.live_blocks, 0);
    counting_allocator_destroy(&c);
  }
  tf_data_free(&d);
#endif
}

/* tk_expf and tk_tanhf (the CPU's vectorizable versions) against the C library. */
TEST(transformer_math_matches_libm) {
  double worst_exp = 0, worst_tanh = 0;
  int i;
  for (i = 0; i <= 200000; i++) {
    const float x = -87.0f + 175.0f * (float)i / 200000.0f, t = -10.0f + 20.0f * (float)i / 200000.0f;
    const double e = exp((double)x), th = tanh((double)t);
    const double re = fabs((double)tk_expf(x) - e) / e, at = fabs((double)tk_tanhf(t) - th);
    if (re > worst_exp) worst_exp = re;
    if (at > worst_tanh) worst_tanh = at;
  }
  CHECK_MSG(worst_exp <= 2.5e-7, "tk_expf: relative error %g", worst_exp); /* ~2 ulp */
  CHECK_MSG(worst_tanh <= 2e-7, "tk_tanhf: absolute error %g", worst_tanh);
  CHECK(tk_expf(-100.0f) == 0.0f);
  CHECK(tk_expf(0.0f) == 1.0f);
  CHECK(tk_tanhf(0.0f) == 0.0f && tk_tanhf(-30.0f) == -1.0f && tk_tanhf(30.0f) == 1.0f);
}
