/* SPDX-License-Identifier: MIT */
/*
 * backend-cpu/kernel/cpu_race.c: the kernel race checker (RACECHECK launches;
 * cubert/kernel_race.h says what it reports). Freestanding.
 *
 * Cubes run one after another on one thread, units in order, so the state
 * needs no atomics. One open-addressing table, keyed by the element's
 * address, holds for each access kind (read, plain write, atomic):
 *   - the epoch of the latest such access (cube, phase epoch) with the first
 *     unit that made it there and a second, different one if any: two units
 *     of one epoch (a phase) conflict when one wrote and not both atomically;
 *   - (global memory) the first cube that made it in the launch and a
 *     second, different one: two cubes conflict the same way.
 * Shared-memory cells belong to one cube (a cell of an earlier cube is
 * stale: its memory is the next cube's). The table grows at half load; if it
 * cannot, checking stops and the launch fails with RESOURCE_EXHAUSTED.
 */
#include "kernel/cpu_kernel.h"
#include "base/fmt.h"

#define RACE_NONE 0xFFFFFFFFu      /* no cube (cube ids are the low 32 bits of CUBE_POS) */
#define RACE_NO_UNIT 0xFFFFu       /* no unit */
#define RACE_UNIFORM_UNIT 0xFFFEu  /* uniform code (CUBERT_KERNEL_UNIFORM) */

/* 20 bytes per kind, 72 per element. Cube ids keep their low 32 bits: two
 * cubes 2^32 apart are taken for one (a launch that large is not checked in
 * practice). */
typedef struct race_kind_t {
  uint32_t cube;       /* epoch: cube of the latest access (RACE_NONE: none yet) */
  uint32_t phase;      /* epoch: the cube's phase epoch */
  uint32_t first_cube; /* launch: first cube (RACE_NONE: none) */
  uint32_t other_cube; /* launch: a second cube (RACE_NONE: none) */
  uint16_t unit;       /* epoch: first unit */
  uint16_t other_unit; /* epoch: a second unit (RACE_NO_UNIT: none) */
} race_kind_t;

typedef struct race_cell_t {
  uintptr_t address;    /* 0: empty */
  uint32_t shared_cube; /* shared cells: the cube they belong to; else RACE_NONE */
  race_kind_t kinds[3]; /* CUBERT_KERNEL_ACCESS_READ / WRITE / ATOMIC */
} race_cell_t;

static void kind_clear(race_kind_t *k) {
  k->cube = k->first_cube = k->other_cube = RACE_NONE;
  k->phase = 0;
  k->unit = k->other_unit = RACE_NO_UNIT;
}

static uint32_t unit_of16(uint32_t u) { return u == RACE_UNIFORM_UNIT ? CUBERT_KERNEL_UNIFORM : u; }

/* splitmix64's finalizer: elements 4 bytes apart spread over the table. */
static size_t hash_address(uintptr_t a, size_t mask) {
  uint64_t h = (uint64_t)a;
  h = (h ^ (h >> 30)) * 0xBF58476D1CE4E5B9ull;
  h = (h ^ (h >> 27)) * 0x94D049BB133111EBull;
  return (size_t)(h ^ (h >> 31)) & mask;
}

static race_cell_t *find_slot(race_cell_t *cells, size_t capacity, uintptr_t a) {
  size_t mask = capacity - 1, i = hash_address(a, mask);
  while (cells[i].address && cells[i].address != a) i = (i + 1) & mask;
  return &cells[i];
}

static int grow(cpu_kernel_race_t *r) {
  size_t cap = r->capacity ? r->capacity * 2 : 1024, i, bytes;
  race_cell_t *cells = 0;
  if (cap > ((size_t)-1) / sizeof(race_cell_t)) return 0;
  bytes = cap * sizeof(race_cell_t);
  if (cubert_allocator_malloc(r->allocator, bytes, 16, (void **)&cells, NULL) != CUBERT_STATUS_OK)
    return 0;
  __builtin_memset(cells, 0, bytes);
  for (i = 0; i < r->capacity; i++)
    if (r->cells[i].address) *find_slot(cells, cap, r->cells[i].address) = r->cells[i];
  cubert_allocator_free(r->allocator, r->cells, r->capacity * sizeof(race_cell_t), 16);
  r->cells = cells;
  r->capacity = cap;
  return 1;
}

static race_cell_t *cell_of(cpu_kernel_race_t *r, const void *address) {
  uintptr_t a = (uintptr_t)address;
  race_cell_t *c;
  int k;
  if (r->failed) return 0;
  if ((r->used + 1) * 2 > r->capacity && !grow(r)) {
    r->failed = 1;
    return 0;
  }
  c = find_slot(r->cells, r->capacity, a);
  if (!c->address) {
    c->address = a;
    c->shared_cube = RACE_NONE;
    for (k = 0; k < 3; k++) kind_clear(&c->kinds[k]);
    r->used++;
  }
  return c;
}

/* Keep the first report (cubes run in order: the lowest cube, then program
 * order), count them all. */
static void report(cubert_kernel_cube_t *cube, uint32_t kind, uint32_t view, const char *name,
                   uint64_t index, uint32_t first_access, uint32_t second_access,
                   uint32_t unit_a, uint64_t cube_a) {
  cubert_kernel_report_t *rep = cube->report;
  if (!rep) return;
  rep->race_count++;
  if (rep->race_kind) return;
  rep->race_kind = kind;
  rep->race_phase = (cube->phase + 1u) / 2u; /* epochs: 2k-1 in phase k, 2k after it */
  rep->race_view = view;
  rep->race_access = first_access | (second_access << 4);
  rep->race_unit_a = unit_a;
  rep->race_unit_b = cube->unit;
  rep->race_cube_a = cube_a;
  rep->race_cube_b = cube->pos_linear;
  rep->race_element = index;
  rep->race_name = name;
}

/* Which kinds conflict with an access of kind `a` (bits). */
static uint32_t conflicts_of(uint32_t a) {
  if (a == CUBERT_KERNEL_ACCESS_READ) return 1u << CUBERT_KERNEL_ACCESS_WRITE | 1u << CUBERT_KERNEL_ACCESS_ATOMIC;
  if (a == CUBERT_KERNEL_ACCESS_WRITE) return 7u;
  return 1u << CUBERT_KERNEL_ACCESS_READ | 1u << CUBERT_KERNEL_ACCESS_WRITE;
}

static void note(cubert_kernel_cube_t *cube, const void *address, uint32_t view, const char *name,
                 uint64_t index, uint32_t access) {
  cpu_kernel_race_t *r = (cpu_kernel_race_t *)cube->race;
  const uint32_t c = (uint32_t)cube->pos_linear, u32 = cube->unit, p = cube->phase;
  const uint16_t u = u32 == CUBERT_KERNEL_UNIFORM ? RACE_UNIFORM_UNIT : (uint16_t)u32;
  const int shared = (view & CUBERT_KERNEL_SHARED_VIEW) != 0;
  race_cell_t *cell;
  race_kind_t *mine;
  uint32_t bits, k;
  if (access == CUBERT_KERNEL_EVENT_SYNC) {
    report(cube, CUBERT_KERNEL_RACE_SYNC_DIVERGENT, 0, name, 0, 0, 0, u32, cube->pos_linear);
    return;
  }
  if (access == CUBERT_KERNEL_EVENT_PLANE) {
    report(cube, CUBERT_KERNEL_RACE_PLANE_DIVERGENT, 0, name, index, 0, 0, u32, cube->pos_linear);
    return;
  }
  if (access == CUBERT_KERNEL_EVENT_PLANE_LANE) {
    report(cube, CUBERT_KERNEL_RACE_PLANE_LANE, 0, name, index, 0, 0, u32, cube->pos_linear);
    return;
  }
  if (access > CUBERT_KERNEL_ACCESS_ATOMIC) return;
  if (cube->unit_done && u32 != CUBERT_KERNEL_UNIFORM)
    report(cube, CUBERT_KERNEL_RACE_UNIT_DONE, view, name, index, access, access, u32,
           cube->pos_linear);
  if (u32 == CUBERT_KERNEL_UNIFORM && access != CUBERT_KERNEL_ACCESS_READ) {
    report(cube, CUBERT_KERNEL_RACE_UNIFORM_WRITE, view, name, index, access, access, u32,
           cube->pos_linear);
    return;
  }
  cell = cell_of(r, address);
  if (!cell) return;
  if (shared && cell->shared_cube != c) { /* an earlier cube's: stale */
    for (k = 0; k < 3; k++) kind_clear(&cell->kinds[k]);
    cell->shared_cube = c;
  }
  bits = conflicts_of(access);
  for (k = 0; k < 3; k++) {
    const race_kind_t *o = &cell->kinds[k];
    if (!(bits & (1u << k))) continue;
    if (o->cube == c && o->phase == p && o->unit != RACE_NO_UNIT &&
        (o->unit != u || o->other_unit != RACE_NO_UNIT)) {
      report(cube, CUBERT_KERNEL_RACE_UNITS, view, name, index, k, access,
             unit_of16(o->unit != u ? o->unit : o->other_unit), cube->pos_linear);
      break;
    }
    if (!shared && o->first_cube != RACE_NONE && (o->first_cube != c || o->other_cube != RACE_NONE)) {
      report(cube, CUBERT_KERNEL_RACE_CUBES, view, name, index, k, access, CUBERT_KERNEL_UNIFORM,
             o->first_cube != c ? o->first_cube : o->other_cube);
      break;
    }
  }
  mine = &cell->kinds[access];
  if (mine->cube != c || mine->phase != p) {
    mine->cube = c;
    mine->phase = p;
    mine->unit = u;
    mine->other_unit = RACE_NO_UNIT;
  } else if (u != mine->unit && mine->other_unit == RACE_NO_UNIT) {
    mine->other_unit = u;
  }
  if (mine->first_cube == RACE_NONE) mine->first_cube = c;
  else if (mine->first_cube != c && mine->other_cube == RACE_NONE) mine->other_cube = c;
}

cubert_status_t cpu_kernel_race_begin(cpu_kernel_context_t *ctx, cpu_kernel_race_t *race,
                                      cubert_allocator_t allocator) {
  race->allocator = allocator;
  race->cells = 0;
  race->capacity = 0;
  race->used = 0;
  race->failed = 0;
  if (!grow(race)) return CUBERT_STATUS_RESOURCE_EXHAUSTED;
  ctx->cube.race = race;
  ctx->cube.race_note = note;
  return CUBERT_STATUS_OK;
}

cubert_status_t cpu_kernel_race_end(cpu_kernel_context_t *ctx, cpu_kernel_race_t *race) {
  int failed = race->failed;
  cubert_allocator_free(race->allocator, race->cells, race->capacity * sizeof(race_cell_t), 16);
  race->cells = 0;
  race->capacity = 0;
  ctx->cube.race = 0;
  ctx->cube.race_note = 0;
  return failed ? CUBERT_STATUS_RESOURCE_EXHAUSTED : CUBERT_STATUS_OK;
}

/* ---- the report's text ---------------------------------------------------------------- */

static const char *access_name(uint32_t a) {
  return a == CUBERT_KERNEL_ACCESS_READ ? "read" : a == CUBERT_KERNEL_ACCESS_WRITE ? "write" : "atomic";
}

/* "shared sums[3]" / "buffer 2 (out)[5]" */
static void append_element(cubert_fmt_t *f, const cubert_kernel_report_t *r) {
  if (r->race_view & CUBERT_KERNEL_SHARED_VIEW) {
    cubert__fmt_append_str(f, "shared ");
    cubert__fmt_append_str(f, r->race_name ? r->race_name : "?");
  } else {
    cubert__fmt_append_str(f, "buffer ");
    cubert__fmt_append_u64(f, r->race_view);
    cubert__fmt_append_str(f, " (");
    cubert__fmt_append_str(f, r->race_name ? r->race_name : "?");
    cubert__fmt_append_str(f, ")");
  }
  cubert__fmt_append_str(f, "[");
  cubert__fmt_append_u64(f, r->race_element);
  cubert__fmt_append_str(f, "]");
}

static void append_unit(cubert_fmt_t *f, uint32_t unit) {
  if (unit == CUBERT_KERNEL_UNIFORM) cubert__fmt_append_str(f, "uniform code");
  else {
    cubert__fmt_append_str(f, "unit ");
    cubert__fmt_append_u64(f, unit);
  }
}

void cpu_kernel_race_text(const cubert_kernel_report_t *r, char *text, size_t size) {
  cubert_fmt_t f;
  const char *name = r->race_name ? r->race_name : "?";
  cubert__fmt_initialize(&f, text, size);
  cubert__fmt_append_str(&f, "race: ");
  switch (r->race_kind) {
    case CUBERT_KERNEL_RACE_UNITS:
      cubert__fmt_append_str(&f, "units ");
      cubert__fmt_append_u64(&f, r->race_unit_a);
      cubert__fmt_append_str(&f, " and ");
      cubert__fmt_append_u64(&f, r->race_unit_b);
      cubert__fmt_append_str(&f, " of cube ");
      cubert__fmt_append_u64(&f, r->race_cube_b);
      cubert__fmt_append_str(&f, " in phase ");
      cubert__fmt_append_u64(&f, r->race_phase);
      cubert__fmt_append_str(&f, ": ");
      cubert__fmt_append_str(&f, access_name(r->race_access & 15u));
      cubert__fmt_append_str(&f, " then ");
      cubert__fmt_append_str(&f, access_name(r->race_access >> 4));
      cubert__fmt_append_str(&f, " of ");
      append_element(&f, r);
      break;
    case CUBERT_KERNEL_RACE_CUBES:
      cubert__fmt_append_str(&f, "cubes ");
      cubert__fmt_append_u64(&f, r->race_cube_a);
      cubert__fmt_append_str(&f, " and ");
      cubert__fmt_append_u64(&f, r->race_cube_b);
      cubert__fmt_append_str(&f, " (unit ");
      cubert__fmt_append_u64(&f, r->race_unit_b);
      cubert__fmt_append_str(&f, ", phase ");
      cubert__fmt_append_u64(&f, r->race_phase);
      cubert__fmt_append_str(&f, "): ");
      cubert__fmt_append_str(&f, access_name(r->race_access & 15u));
      cubert__fmt_append_str(&f, " then ");
      cubert__fmt_append_str(&f, access_name(r->race_access >> 4));
      cubert__fmt_append_str(&f, " of ");
      append_element(&f, r);
      break;
    case CUBERT_KERNEL_RACE_UNIFORM_WRITE:
      cubert__fmt_append_str(&f, "uniform code of cube ");
      cubert__fmt_append_u64(&f, r->race_cube_b);
      cubert__fmt_append_str(&f, " after phase ");
      cubert__fmt_append_u64(&f, r->race_phase);
      cubert__fmt_append_str(&f, " wrote ");
      append_element(&f, r);
      break;
    case CUBERT_KERNEL_RACE_PLANE_DIVERGENT:
    case CUBERT_KERNEL_RACE_SYNC_DIVERGENT:
      cubert__fmt_append_str(&f, name);
      cubert__fmt_append_str(&f, " inside a phase (divergent control flow): ");
      append_unit(&f, r->race_unit_b);
      cubert__fmt_append_str(&f, " of cube ");
      cubert__fmt_append_u64(&f, r->race_cube_b);
      cubert__fmt_append_str(&f, ", phase ");
      cubert__fmt_append_u64(&f, r->race_phase);
      break;
    case CUBERT_KERNEL_RACE_UNIT_DONE:
      append_unit(&f, r->race_unit_b);
      cubert__fmt_append_str(&f, " of cube ");
      cubert__fmt_append_u64(&f, r->race_cube_b);
      cubert__fmt_append_str(&f, " went on after CUBERT_UNIT_DONE in phase ");
      cubert__fmt_append_u64(&f, r->race_phase);
      cubert__fmt_append_str(&f, " (a nested loop?): ");
      cubert__fmt_append_str(&f, access_name(r->race_access & 15u));
      cubert__fmt_append_str(&f, " of ");
      append_element(&f, r);
      break;
    case CUBERT_KERNEL_RACE_PLANE_LANE:
      cubert__fmt_append_str(&f, name);
      cubert__fmt_append_str(&f, " from lane ");
      cubert__fmt_append_u64(&f, r->race_element);
      cubert__fmt_append_str(&f, ", which the plane lacks: ");
      append_unit(&f, r->race_unit_b);
      cubert__fmt_append_str(&f, " of cube ");
      cubert__fmt_append_u64(&f, r->race_cube_b);
      break;
    default:
      cubert__fmt_append_str(&f, "none");
      break;
  }
}
