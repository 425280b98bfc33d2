/* SPDX-License-Identifier: MIT */
/* tests/sim/test_sim_differential.c: random operation programs run in the
 * threaded and the deterministic server give byte-identical results (and
 * both match a sequential host model), with the race checker on and 0
 * reports. The generator keeps every program race-free: before an access
 * that could conflict with another stream's earlier access, the host syncs
 * that stream unless the runtime's automatic cross-stream wait covers it. */
#include "sim_support.h"

#include "cubert/sim.h"

#define DIFF_BUFFERS 4
#define DIFF_OPS 14
#define DIFF_MAX_READS (DIFF_OPS + DIFF_BUFFERS)

enum { OP_ADD, OP_COPY, OP_MIX, OP_WRITE, OP_READ, OP_KINDS };

typedef struct diff_op_t {
  uint32_t kind, stream, x, y, value;
  uint32_t sync_mask; /* host syncs these streams before the op */
} diff_op_t;

typedef struct diff_prog_t {
  uint32_t origin[DIFF_BUFFERS], base[DIFF_BUFFERS];
  diff_op_t ops[DIFF_OPS];
} diff_prog_t;

typedef struct diff_out_t {
  uint32_t reads[DIFF_MAX_READS][SIM_N];
  uint32_t count;
  uint64_t reports;
} diff_out_t;

static uint32_t below(uint64_t *rng, uint32_t n) {
  return (uint32_t)((cubert_sim_splitmix64(rng) >> 32) % n);
}

static void generate(uint64_t seed, diff_prog_t *p) {
  uint64_t rng = seed;
  /* acc[x][t]: 0 none, 1 read, 2 write by stream t since t's last host sync */
  uint32_t acc[DIFF_BUFFERS][SIM_STREAMS], x, t, i;
  memset(acc, 0, sizeof acc);
  for (x = 0; x < DIFF_BUFFERS; x++) {
    p->origin[x] = below(&rng, SIM_STREAMS);
    p->base[x] = below(&rng, 1000);
    acc[x][p->origin[x]] = 2; /* the upload */
  }
  for (i = 0; i < DIFF_OPS; i++) {
    diff_op_t *op = &p->ops[i];
    uint32_t touched[2], modes[2], nt = 0, k;
    op->kind = below(&rng, OP_KINDS);
    op->stream = below(&rng, SIM_STREAMS);
    op->x = below(&rng, DIFF_BUFFERS);
    op->y = (op->x + 1 + below(&rng, DIFF_BUFFERS - 1)) % DIFF_BUFFERS;
    op->value = below(&rng, 100);
    op->sync_mask = 0;
    switch (op->kind) {
      case OP_ADD:
      case OP_WRITE:
        touched[nt] = op->x, modes[nt++] = 2;
        break;
      case OP_READ:
        touched[nt] = op->x, modes[nt++] = 1;
        break;
      default: /* copy, mix: read x, write y */
        touched[nt] = op->x, modes[nt++] = 1;
        touched[nt] = op->y, modes[nt++] = 2;
        break;
    }
    for (k = 0; k < nt; k++) {
      x = touched[k];
      for (t = 0; t < SIM_STREAMS; t++) {
        if (t == op->stream || acc[x][t] == 0) continue;
        if (modes[k] == 1 && acc[x][t] == 1) continue; /* read after read */
        if (t == p->origin[x] && op->stream != p->origin[x]) continue; /* the runtime waits */
        op->sync_mask |= 1u << t;
      }
    }
    for (t = 0; t < SIM_STREAMS; t++)
      if (op->sync_mask & (1u << t))
        for (x = 0; x < DIFF_BUFFERS; x++) acc[x][t] = 0;
    for (k = 0; k < nt; k++)
      if (acc[touched[k]][op->stream] < modes[k]) acc[touched[k]][op->stream] = modes[k];
    if (op->kind == OP_READ) /* read_one waits for its stream */
      for (x = 0; x < DIFF_BUFFERS; x++) acc[x][op->stream] = 0;
  }
}

static void run_model(const diff_prog_t *p, diff_out_t *out) {
  uint32_t b[DIFF_BUFFERS][SIM_N], i, j, x;
  memset(out, 0, sizeof(*out));
  for (x = 0; x < DIFF_BUFFERS; x++)
    for (j = 0; j < SIM_N; j++) b[x][j] = p->base[x] + j;
  for (i = 0; i < DIFF_OPS; i++) {
    const diff_op_t *op = &p->ops[i];
    for (j = 0; j < SIM_N; j++) {
      switch (op->kind) {
        case OP_ADD: b[op->x][j] += op->value; break;
        case OP_WRITE: b[op->x][j] = op->value + j; break;
        case OP_COPY: b[op->y][j] = b[op->x][j]; break;
        case OP_MIX: b[op->y][j] = b[op->y][j] * 3u + b[op->x][j]; break;
        default: break;
      }
    }
    if (op->kind == OP_READ) memcpy(out->reads[out->count++], b[op->x], sizeof b[0]);
  }
  for (x = 0; x < DIFF_BUFFERS; x++) memcpy(out->reads[out->count++], b[x], sizeof b[0]);
}

/* Set while programs are expected to be reported (no log printed then). */
static int g_expect_reports;

static void run_server(const diff_prog_t *p, uint32_t mode, uint64_t seed, diff_out_t *out) {
  sim_env_t env;
  sim_config_t cfg;
  cubert_handle_t h[DIFF_BUFFERS];
  uint32_t i, t, x;
  memset(out, 0, sizeof(*out));
  memset(&cfg, 0, sizeof cfg);
  cfg.mode = mode;
  cfg.seed = seed;
  cfg.race = 1;
  sim_env_open(&env, &cfg);
  for (x = 0; x < DIFF_BUFFERS; x++) h[x] = sim_create(env.s[p->origin[x]], p->base[x]);
  for (i = 0; i < DIFF_OPS; i++) {
    const diff_op_t *op = &p->ops[i];
    cubert_client_t *c = env.s[op->stream];
    for (t = 0; t < SIM_STREAMS; t++)
      if (op->sync_mask & (1u << t)) sim_sync(env.s[t]);
    switch (op->kind) {
      case OP_ADD: sim_add(c, &h[op->x], op->value); break;
      case OP_WRITE: sim_write(c, &h[op->x], op->value); break;
      case OP_COPY: sim_copy(c, &h[op->x], &h[op->y]); break;
      case OP_MIX: sim_mix(c, &h[op->x], &h[op->y]); break;
      default: sim_read(c, &h[op->x], out->reads[out->count++]); break;
    }
  }
  for (t = 0; t < SIM_STREAMS; t++) sim_sync(env.s[t]);
  for (x = 0; x < DIFF_BUFFERS; x++) sim_read(env.s[p->origin[x]], &h[x], out->reads[out->count++]);
  out->reports = sim_env_reports(&env);
  if (out->reports && !g_expect_reports) sim_print_run(&env, "differential program reported a race");
  for (x = 0; x < DIFF_BUFFERS; x++) sim_release(env.client, &h[x]);
  sim_env_close(&env);
}

TEST_EX(simdiff_threaded_and_deterministic_agree, 300) {
  static diff_prog_t p;
  static diff_out_t model, det, thr;
  uint64_t n = SIM_SANITIZED ? 200 : 1000, i, syncs = 0, reads = 0;
  for (i = 0; i < n; i++) {
    uint64_t pseed = 0xD1FFull * (i + 1);
    uint32_t k;
    generate(pseed, &p);
    for (k = 0; k < DIFF_OPS; k++) {
      syncs += p.ops[k].sync_mask != 0;
      reads += p.ops[k].kind == OP_READ;
    }
    run_model(&p, &model);
    run_server(&p, CUBERT_CPU_MODE_DETERMINISTIC, pseed ^ 0x5eed, &det);
    run_server(&p, CUBERT_CPU_MODE_THREADED, 0, &thr);
    CHECK_EQ_U64(det.count, model.count);
    CHECK_EQ_U64(thr.count, model.count);
    CHECK_MSG(memcmp(det.reads, model.reads, model.count * sizeof det.reads[0]) == 0,
              "program %llu: deterministic (seed %llu) differs from the host model",
              (unsigned long long)pseed, (unsigned long long)(pseed ^ 0x5eed));
    CHECK_MSG(memcmp(thr.reads, det.reads, det.count * sizeof det.reads[0]) == 0,
              "program %llu: threaded differs from deterministic (seed %llu)",
              (unsigned long long)pseed, (unsigned long long)(pseed ^ 0x5eed));
    CHECK_EQ_U64(det.reports, 0);
    CHECK_EQ_U64(thr.reports, 0);
  }
  printf("differential: %llu random programs (%u ops, %u buffers, %u streams; %llu host syncs, "
         "%llu reads) byte-identical in threaded and deterministic modes and the host model%s\n",
         (unsigned long long)n, DIFF_OPS, DIFF_BUFFERS, SIM_STREAMS, (unsigned long long)syncs,
         (unsigned long long)reads, SIM_SANITIZED ? " (sanitizer build: reduced from 1000)" : "");
  CHECK(syncs > n); /* the generator really inserts syncs */
}

/* The generator's syncs are needed: without them the checker reports races. */
TEST(simdiff_dropping_the_syncs_is_reported) {
  static diff_prog_t p;
  static diff_out_t det;
  uint64_t i, reported = 0, tried = 0;
  g_expect_reports = 1;
  for (i = 0; i < 200 && tried < 20; i++) {
    uint32_t k, had = 0;
    generate(0xBADull * (i + 1), &p);
    for (k = 0; k < DIFF_OPS; k++) {
      had |= p.ops[k].sync_mask != 0;
      p.ops[k].sync_mask = 0;
    }
    if (!had) continue;
    tried++;
    run_server(&p, CUBERT_CPU_MODE_DETERMINISTIC, i, &det);
    reported += det.reports > 0;
  }
  printf("programs with their syncs removed: %llu/%llu reported\n", (unsigned long long)reported,
         (unsigned long long)tried);
  CHECK_EQ_U64(tried, 20);
  CHECK(reported > 0);
}
