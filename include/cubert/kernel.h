/* SPDX-License-Identifier: MIT */
/*
 * cubert/kernel.h: the single-source kernel dialect and the kernel
 * descriptor.
 *
 * One kernel source compiles as C99 for the CPU server and as CUDA C++ with
 * nvcc (when __CUDACC__ is defined). docs/kernels.md is the guide; in short:
 *
 *   CUBERT_KERNEL(add_f32) {
 *     CUBERT_BUFFER(const float, a, 0);     // typed views of buffer slots
 *     CUBERT_BUFFER(const float, b, 1);
 *     CUBERT_BUFFER(float, out, 2);
 *     CUBERT_PHASE {                        // runs once for every unit
 *       uint64_t i = ABSOLUTE_POS;
 *       if (i < CUBERT_LEN(out))
 *         CUBERT_STORE(out, i, CUBERT_LOAD(a, i) + CUBERT_LOAD(b, i));
 *     }
 *   }
 *
 * Execution model. A kernel body runs once per cube. Code outside a phase is
 * *uniform*: on the CPU it runs once per cube, on CUDA every unit (thread)
 * runs it redundantly, so it must compute the same value for every unit and
 * must not write memory (declare views, scalars, shared arrays, loop
 * counters; loop over phases; read memory). `CUBERT_PHASE { ... }` is a block
 * that every unit runs, between two cube-wide barriers: on the CPU a loop
 * over the cube's units, on CUDA __syncthreads(), the block, __syncthreads().
 * The barrier rule (cubert/kernel_sync.h), the same on both sides: a phase
 * begins and ends with a barrier, so
 *   - what a phase writes is visible to the next phase and to the uniform
 *     code after it; only units of one phase (and cubes) can race, which the
 *     RACECHECK mode checks (cubert/kernel_race.h);
 *   - values that cross a phase boundary live in shared memory
 *     (CUBERT_SHARED) or in a per-unit variable (CUBERT_UNIT_VAR/CUBERT_UNIT);
 *     a plain local declared inside a phase dies at the end of the phase;
 *   - phases must not nest, and a phase may only sit under uniform control
 *     flow (an `if`/`for` whose condition is the same for all units);
 *   - leave a phase early for the current unit with CUBERT_UNIT_DONE, at the
 *     phase's own level (never `return` or a `break` out of the phase: on the
 *     CPU that would skip the remaining units). It cannot end the unit from
 *     inside a loop nested in the phase (C has no `continue` of an outer
 *     loop): inside CUBERT_UNIT_FOR it does not compile; inside a plain loop
 *     it continues that loop, and VALIDATE and RACECHECK launches fail at the
 *     unit's next access (docs/kernels.md).
 * Units of one phase run in order on the CPU (unit 0, 1, ...) but kernels
 * must not rely on it: on CUDA they run concurrently. Plane (warp) operations
 * and the cube-wide reduce / scan are statements of uniform code
 * (cubert/kernel_plane.h); atomics: cubert/kernel_atomic.h; math:
 * cubert/kernel_math.h.
 *
 * Positions (CubeCL's names): CUBE_POS_X/Y/Z (uint32_t), CUBE_POS (uint64_t,
 * linear: x + X*(y + Y*z)), CUBE_COUNT_X/Y/Z, CUBE_COUNT (uint64_t),
 * CUBE_DIM_X/Y/Z, CUBE_DIM (units per cube), UNIT_POS_X/Y/Z (uint32_t) and
 * UNIT_POS (linear, below CUBE_DIM: uint32_t on CUDA, uint64_t on the CPU, where
 * a 64-bit index is what lets the compiler vectorize a phase; convert it to
 * uint32_t before arithmetic meant to wrap), ABSOLUTE_POS_X/Y/Z (uint32_t) and
 * ABSOLUTE_POS (uint64_t: CUBE_POS * CUBE_DIM + UNIT_POS); the UNIT_ and
 * ABSOLUTE_ positions only inside a phase.
 *
 * Buffers. CUBERT_BUFFER(type, name, slot) declares a view {ptr, len} of
 * argument buffer `slot` (len = size_bytes / sizeof(type); `const type` for a
 * read-only view, which then rejects CUBERT_STORE at compile time).
 * CUBERT_LOAD(name, i) and CUBERT_STORE(name, i, v) evaluate `i` once and obey
 * the launch's execution mode:
 *   UNCHECKED  raw access (an index >= len is undefined behaviour);
 *   CHECKED    an out-of-bounds load gives 0, an out-of-bounds store is
 *              dropped; the launch report counts them;
 *   VALIDATE   as CHECKED, and the report also holds the first violation
 *              (lowest cube, then program order): buffer slot, element index,
 *              view length, load or store, cube position;
 *   RACECHECK  as VALIDATE, and the kernel race checker runs (CPU drivers;
 *              cubert/kernel_race.h; CUDA runs it as VALIDATE).
 * `name` must be the identifier given to CUBERT_BUFFER (the macros paste it).
 * Direct `name.ptr[i]` is a raw access in every mode. CUBERT_LEN(name) is
 * the view's length in elements.
 * Declared cube bounds (CUBERT_CUBE_BOUND, CUBERT_CUBE_BOUNDS_DONE) let full
 * cubes of a CHECKED launch run unchecked: cubert/kernel_bounds.h. Line views
 * (CUBERT_BUFFER_LINES: 2/4/8/16-byte groups checked as a unit) and the
 * barrier-free CUBERT_UNIT_FOR: cubert/kernel_line.h. Both are included here.
 *
 * Scalars. CUBERT_SCALAR_U32/I32/U64/I64/F32/F64(name, slot) declares a const
 * local holding scalar slot `slot` (each slot is 8 bytes; see
 * cubert_kernel_args_t).
 *
 * Shared memory. CUBERT_SHARED(type, name, count) declares a per-cube array
 * as a view, like a buffer's: CUBERT_LOAD / CUBERT_STORE / the atomics take
 * it (bounds-checked, seen by the race checker; `name.ptr[i]` is raw). count
 * is a compile-time constant, each array at most
 * CUBERT_KERNEL_MAX_STATIC_SHARED bytes (CUDA's static limit, for all of
 * them together there); on the CPU the storage is the cube's part of a
 * per-thread block that grows to what the kernel declares (so the compiler
 * sees no uninitialized local, and a kernel without shared arrays costs
 * nothing), on CUDA __shared__. CUBERT_SHARED_DYNAMIC(type, name)
 * is the view of the per-cube dynamic block of the launch's size (launch
 * arguments, else kernel->shared_memory_bytes)
 * (CUBERT_SHARED_DYNAMIC_BYTES). Every cube has its own shared memory; its
 * initial content is unspecified. Declare both in uniform code, at the
 * kernel's top level (not in a loop: each declaration takes new storage).
 *
 * Per-unit variables. CUBERT_UNIT_VAR(type, name) in uniform code declares a
 * variable every unit has its own copy of (CPU: CUBE_DIM copies from the
 * cube's block; CUDA: a register); CUBERT_UNIT(name) is the current unit's
 * copy, inside a phase. Declare them at the kernel's top level too.
 *
 * Entry points. On the CPU, CUBERT_KERNEL(name) defines
 *   static void name(const cubert_kernel_args_t *args, cubert_kernel_cube_t *cube)
 * which the executor calls once per cube. Under nvcc it defines
 *   extern "C" __global__ void name(const cubert_kernel_args_t args,
 *                                   uint32_t mode, cubert_kernel_report_t *report)
 * (args by value; report may be NULL; launch with blockDim = the cube dim,
 * gridDim = the cube count, dynamic shared bytes = shared_memory_bytes).
 *
 * This header is self-contained C99/C++; the host part (descriptor, argument
 * and report types, inline helpers) is what servers use.
 */
#ifndef CUBERT_KERNEL_H
#define CUBERT_KERNEL_H

#include "cubert/base.h"
#include "cubert/properties.h" /* cubert_dim3_t */

/* ---- limits ------------------------------------------------------------------ */

/* Buffer slots and 8-byte scalar slots of one launch. */
#define CUBERT_KERNEL_MAX_BUFFERS 16
#define CUBERT_KERNEL_MAX_SCALARS 16
/* Units per cube (x*y*z of the cube dim); the CPU executor refuses more. */
#define CUBERT_KERNEL_MAX_UNITS 1024
/* Largest element type of a buffer view (bytes). */
#define CUBERT_KERNEL_MAX_ELEMENT_BYTES 64
/* Static shared memory of one cube (the CUBERT_SHARED arrays together; CUDA's
 * limit for static __shared__ data). */
#define CUBERT_KERNEL_MAX_STATIC_SHARED 49152
/* Largest element of a plane operation's variables (bytes). */
#define CUBERT_KERNEL_PLANE_ELEMENT_BYTES 16
/* The unit of uniform code (cubert_kernel_cube_t.unit, race reports). */
#define CUBERT_KERNEL_UNIFORM 0xFFFFFFFFu
/* A view's index for a shared array: this bit | the source line of its
 * CUBERT_SHARED (CUBERT_SHARED_DYNAMIC: | 0). */
#define CUBERT_KERNEL_SHARED_VIEW 0x80000000u
/* Access kinds (the accessors' is_write argument; race reports). */
#define CUBERT_KERNEL_ACCESS_READ 0u
#define CUBERT_KERNEL_ACCESS_WRITE 1u
#define CUBERT_KERNEL_ACCESS_ATOMIC 2u

/* Execution modes as the dialect sees them; the values equal
 * cubert_execution_mode_t (below). */
#define CUBERT_KERNEL_MODE_CHECKED 0
#define CUBERT_KERNEL_MODE_VALIDATE 1
#define CUBERT_KERNEL_MODE_UNCHECKED 2
#define CUBERT_KERNEL_MODE_RACECHECK 3

#if defined(__CUDACC__)
#define CUBERT_KERNEL_FN_ static __host__ __device__ __forceinline__
#else
#define CUBERT_KERNEL_FN_ static inline
#endif

/* CUBERT_UNIT_DONE's case label: this constant at the phase's level;
 * CUBERT_UNIT_FOR declares a variable of the same name, so CUBERT_UNIT_DONE
 * inside that loop (where it could not end the unit) does not compile. */
enum { CUBERT_UNIT_DONE_cannot_leave_a_CUBERT_UNIT_FOR_loop = 0 };

#if defined(__GNUC__) || defined(__clang__)
#define CUBERT_KERNEL_UNUSED_ __attribute__((unused))
#define CUBERT_KERNEL_LIKELY_(x) __builtin_expect(!!(x), 1)
#define CUBERT_KERNEL_BODY_FN_ static inline __attribute__((always_inline))
#else
#define CUBERT_KERNEL_UNUSED_
#define CUBERT_KERNEL_LIKELY_(x) (x)
#define CUBERT_KERNEL_BODY_FN_ static inline
#endif

CUBERT_EXTERN_C_BEGIN

/* How kernel accessors treat out-of-bounds indices (CubeCL ExecutionMode). */
typedef enum cubert_execution_mode_e {
  CUBERT_EXECUTION_CHECKED = 0,   /* OOB reads give 0, OOB writes are dropped */
  CUBERT_EXECUTION_VALIDATE = 1,  /* as checked, and an error is queued */
  CUBERT_EXECUTION_UNCHECKED = 2, /* raw accesses */
  CUBERT_EXECUTION_RACECHECK = 3, /* as validate, and the kernel race checker runs
                                     (CPU drivers: cubes one after another on one
                                      thread; CUDA: runs as VALIDATE) */
  CUBERT_EXECUTION_MODE_FORCE_32BIT_ = 0x7FFFFFFF /* 4 bytes everywhere */
} cubert_execution_mode_t;

/* ---- launch arguments ---------------------------------------------------------- */

/* One resolved buffer: a host pointer (CPU server) or a device address (CUDA
 * server) and its size in bytes. */
typedef struct cubert_kernel_buffer_t {
  void *ptr;
  uint64_t size_bytes;
} cubert_kernel_buffer_t;

/* The arguments of one launch, fixed-size so a server fills it without
 * allocating and the CUDA server passes it by value as the kernel's first
 * parameter (same layout on host and device).
 *   buffers[i]  buffer slot i (slots >= buffer_count must be {NULL, 0});
 *   scalars[j]  scalar slot j, 8 bytes each: a u32/i32 in the low 32 bits, an
 *               f32 as its IEEE bits in the low 32 bits, a u64/i64/f64 in all
 *               64 (use the cubert_kernel_args_set_* helpers).
 * Plain data; zero it (cubert_kernel_args_initialize) before filling it. */
typedef struct cubert_kernel_args_t {
  cubert_kernel_buffer_t buffers[CUBERT_KERNEL_MAX_BUFFERS];
  uint64_t scalars[CUBERT_KERNEL_MAX_SCALARS];
  uint32_t buffer_count;
  uint32_t scalar_count;
} cubert_kernel_args_t;

/* What the accessors observed during one launch (CHECKED / VALIDATE).
 * oob_count counts out-of-bounds accesses (CHECKED and VALIDATE); the rest is
 * filled in VALIDATE only, for the first violation: the one in the lowest
 * linear cube, first in that cube's program order. */
typedef struct cubert_kernel_report_t {
  uint64_t oob_count;       /* out-of-bounds loads + stores */
  uint32_t has_violation;   /* 1 when the fields below are valid */
  uint32_t buffer_index;    /* buffer slot */
  uint64_t element_index;   /* the index used */
  uint64_t buffer_length;   /* the view's length in elements */
  uint32_t is_write;        /* 1: a store, 0: a load */
  uint32_t reserved;
  cubert_dim3_t cube_pos;   /* cube that made the access */
  uint64_t cube_linear;     /* its CUBE_POS */
  const char *kernel_name;  /* the descriptor's name (set by the server) */
  /* RACECHECK (CPU drivers; cubert/kernel_race.h): the first report of the
   * kernel race checker, in cube order then program order. */
  uint64_t race_count;      /* reports of the launch (all kinds) */
  uint32_t race_kind;       /* CUBERT_KERNEL_RACE_*; 0: none */
  uint32_t race_phase;      /* the cube's phase (1: its first; 0: uniform code before it) */
  uint32_t race_view;       /* buffer slot, or CUBERT_KERNEL_SHARED_VIEW | line */
  uint32_t race_access;     /* first access kind | second << 4 (CUBERT_KERNEL_ACCESS_*) */
  uint32_t race_unit_a;     /* the earlier unit (CUBERT_KERNEL_UNIFORM: uniform code) */
  uint32_t race_unit_b;     /* the later one */
  uint64_t race_cube_a;     /* the earlier access's cube (linear) */
  uint64_t race_cube_b;     /* the later one's */
  uint64_t race_element;    /* the element's index in the view */
  const char *race_name;    /* the view's identifier, or the primitive's name */
} cubert_kernel_report_t;

/* Zero every field. */
CUBERT_KERNEL_FN_ void cubert_kernel_args_initialize(cubert_kernel_args_t *args) {
  uint32_t i;
  for (i = 0; i < CUBERT_KERNEL_MAX_BUFFERS; i++) {
    args->buffers[i].ptr = NULL;
    args->buffers[i].size_bytes = 0;
  }
  for (i = 0; i < CUBERT_KERNEL_MAX_SCALARS; i++) args->scalars[i] = 0;
  args->buffer_count = 0;
  args->scalar_count = 0;
}

/* Set buffer slot `slot` (< CUBERT_KERNEL_MAX_BUFFERS; larger slots are
 * ignored and return false) and grow buffer_count to cover it. */
CUBERT_KERNEL_FN_ bool cubert_kernel_args_set_buffer(cubert_kernel_args_t *args, uint32_t slot,
                                                     void *ptr, uint64_t size_bytes) {
  if (slot >= CUBERT_KERNEL_MAX_BUFFERS) return false;
  args->buffers[slot].ptr = ptr;
  args->buffers[slot].size_bytes = size_bytes;
  if (args->buffer_count < slot + 1) args->buffer_count = slot + 1;
  return true;
}

/* Set scalar slot `slot` (< CUBERT_KERNEL_MAX_SCALARS, else ignored and
 * false) to a 64-bit pattern and grow scalar_count to cover it. */
CUBERT_KERNEL_FN_ bool cubert_kernel_args_set_u64(cubert_kernel_args_t *args, uint32_t slot,
                                                  uint64_t value) {
  if (slot >= CUBERT_KERNEL_MAX_SCALARS) return false;
  args->scalars[slot] = value;
  if (args->scalar_count < slot + 1) args->scalar_count = slot + 1;
  return true;
}

CUBERT_KERNEL_FN_ bool cubert_kernel_args_set_u32(cubert_kernel_args_t *args, uint32_t slot,
                                                  uint32_t value) {
  return cubert_kernel_args_set_u64(args, slot, (uint64_t)value);
}

CUBERT_KERNEL_FN_ bool cubert_kernel_args_set_i32(cubert_kernel_args_t *args, uint32_t slot,
                                                  int32_t value) {
  return cubert_kernel_args_set_u64(args, slot, (uint64_t)(uint32_t)value);
}

CUBERT_KERNEL_FN_ bool cubert_kernel_args_set_i64(cubert_kernel_args_t *args, uint32_t slot,
                                                  int64_t value) {
  return cubert_kernel_args_set_u64(args, slot, (uint64_t)value);
}

/* Bit conversions between scalar slots and floats (IEEE-754 binary32/64). */
CUBERT_KERNEL_FN_ uint64_t cubert_kernel_f32_bits(float value) {
  union {
    float f;
    uint32_t u;
  } c;
  c.f = value;
  return (uint64_t)c.u;
}

CUBERT_KERNEL_FN_ float cubert_kernel_bits_f32(uint64_t bits) {
  union {
    float f;
    uint32_t u;
  } c;
  c.u = (uint32_t)bits;
  return c.f;
}

CUBERT_KERNEL_FN_ uint64_t cubert_kernel_f64_bits(double value) {
  union {
    double f;
    uint64_t u;
  } c;
  c.f = value;
  return c.u;
}

CUBERT_KERNEL_FN_ double cubert_kernel_bits_f64(uint64_t bits) {
  union {
    double f;
    uint64_t u;
  } c;
  c.u = bits;
  return c.f;
}

CUBERT_KERNEL_FN_ bool cubert_kernel_args_set_f32(cubert_kernel_args_t *args, uint32_t slot,
                                                  float value) {
  return cubert_kernel_args_set_u64(args, slot, cubert_kernel_f32_bits(value));
}

CUBERT_KERNEL_FN_ bool cubert_kernel_args_set_f64(cubert_kernel_args_t *args, uint32_t slot,
                                                  double value) {
  return cubert_kernel_args_set_u64(args, slot, cubert_kernel_f64_bits(value));
}

/* ---- the cube context ------------------------------------------------------------ */

#if !defined(__CUDACC__)
/* What a CPU kernel sees of the cube it runs (filled by the executor; the
 * dialect's macros read it, kernels need not touch it). */
typedef struct cubert_kernel_cube_t {
  cubert_dim3_t pos;             /* CUBE_POS_X/Y/Z */
  cubert_dim3_t count;           /* CUBE_COUNT_X/Y/Z */
  cubert_dim3_t dim;             /* CUBE_DIM_X/Y/Z */
  uint32_t units;                /* CUBE_DIM = dim.x * dim.y * dim.z */
  uint64_t pos_linear;           /* CUBE_POS */
  uint64_t count_linear;         /* CUBE_COUNT */
  uint32_t mode;                 /* CUBERT_KERNEL_MODE_* */
  uint32_t reserved;
  void *dynamic_shared;          /* this cube's dynamic shared block */
  uint64_t dynamic_shared_bytes; /* its size (kernel->shared_memory_bytes) */
  cubert_kernel_report_t *report;/* where the accessors record violations */
  void *oob_sink;                /* CUBERT_KERNEL_MAX_ELEMENT_BYTES writable bytes */
  const void *oob_zero;          /* as many zero bytes, never written */
  /* ---- the execution model (kernel_sync.h, kernel_plane.h, kernel_race.h) ---- */
  uint32_t plane_dim;            /* PLANE_DIM: units per plane (a power of two; 32) */
  uint32_t unit;                 /* checked copy: the unit a phase runs (UNIFORM between) */
  uint32_t phase;                /* +1 at each phase's start and end (the race epochs) */
  uint32_t unit_done;            /* checked copy: CUBERT_UNIT_DONE ran for `unit` */
  /* The cube's block for its CUBERT_SHARED arrays, CUBERT_UNIT_VAR copies and
   * the plane operations' scratch, handed out in declaration order. A cube
   * whose declarations do not fit runs no phase and no plane operation
   * (scratch_short); the runner grows the block to scratch_used and runs
   * the cube again, so the block fits every kernel after its first cube. */
  unsigned char *scratch;
  uint64_t scratch_bytes;
  uint64_t scratch_used;
  uint32_t scratch_short;
  uint32_t reserved2;
  unsigned char *plane_scratch;  /* units * CUBERT_KERNEL_PLANE_ELEMENT_BYTES, from `scratch`
                                    at the first CUBERT_UNIT_VAR */
  void *race;                    /* RACECHECK: the checker's state; NULL otherwise */
  /* RACECHECK: record an access (the checker's; NULL otherwise). */
  void (*race_note)(struct cubert_kernel_cube_t *cube, const void *address, uint32_t view,
                    const char *name, uint64_t index, uint32_t access);
} cubert_kernel_cube_t;

/* The unit a phase is running (CPU). `linear` (UNIT_POS) is 64-bit so that
 * the addresses a phase computes from it (ABSOLUTE_POS, tile[UNIT_POS]) are
 * affine in the loop counter, which the compiler needs to vectorize the unit
 * loop; its value is below CUBERT_KERNEL_MAX_UNITS. The cube's dims and its
 * first absolute position are copied here when the phase begins: the unit
 * loop's bounds and ABSOLUTE_POS then live in registers, where a store
 * through a u32 / i32 view cannot change them (read from the cube, every
 * such store might alias its fields, and the loop reloads them per unit and
 * does not vectorize). */
typedef struct cubert_kernel_unit_t {
  uint32_t x, y, z;
  uint32_t dim_x, dim_y, dim_z; /* cube->dim */
  uint64_t linear;
  uint64_t base; /* cube->pos_linear * cube->units: ABSOLUTE_POS of unit 0 */
} cubert_kernel_unit_t;

/* The CPU entry point of a kernel: runs one cube (all its phases). */
typedef void (*cubert_kernel_cpu_fn_t)(const cubert_kernel_args_t *args,
                                       cubert_kernel_cube_t *cube);
#else
/* On CUDA the cube context carries the mode, the report and the unit's
 * out-of-bounds accesses not reported yet: the accessors only count them
 * (registers: no memory write between two loads, so a checked body's loads
 * issue together as an unchecked one's do), and the entry point reports
 * them when the body returns (cubert_kernel_oob_report_). */
typedef struct cubert_kernel_cube_t {
  uint32_t mode;
  cubert_kernel_report_t *report;
  uint64_t oob_count;    /* this unit's out-of-bounds loads + stores so far */
  uint32_t oob_buffer;   /* the first one's buffer slot, */
  uint64_t oob_index;    /* index, */
  uint64_t oob_len;      /* the view's checked length */
  uint32_t oob_is_write; /* and kind */
} cubert_kernel_cube_t;
typedef void (*cubert_kernel_cpu_fn_t)(const cubert_kernel_args_t *args, void *cube);
#endif

/* ---- the kernel descriptor --------------------------------------------------------- */

/* A kernel as servers see it. Plain constant data, usually `static const`;
 * a launch borrows it until the launch ran (the drivers keep the pointer).
 *   name              for reports and errors;
 *   cpu_entry         the CPU implementation (NULL: none; the CPU server
 *                     refuses the launch, COMPILATION_FAILED);
 *   cuda_entry_name   the extern "C" __global__ symbol (CUBERT_KERNEL's name);
 *   cuda_image /      the CUDA code holding it. NULL/0 (what
 *   cuda_image_size   CUBERT_KERNEL_DESCRIPTOR sets): the CUDA server finds
 *                     the image registered under cuda_entry_name
 *                     (cubert/cuda.h; the build embeds what nvcc made of the
 *                     kernel source, docs/kernels.md). Else NUL-terminated
 *                     PTX text (size counting the NUL) or cubin / fatbin
 *                     bytes, used as given;
 *   shared_memory_bytes  dynamic shared memory per cube
 *                     (CUBERT_SHARED_DYNAMIC); static CUBERT_SHARED arrays are
 *                     the kernel's own and not counted here;
 *   cube_dim          units per cube (x, y, z), as launched;
 *   buffer_count /    the slots the kernel reads: a launch must provide at
 *   scalar_count      least that many (checked by the servers);
 *   buffer_align      per buffer slot, the alignment (bytes: 1, 2, 4, ..., 64)
 *                     of the view the kernel declares on it (sizeof its
 *                     element type); 0: CUBERT_KERNEL_DEFAULT_BUFFER_ALIGN (4).
 *                     A launch refuses a handle whose byte offset in its
 *                     allocation is not a multiple of it (INVALID_ARGUMENT,
 *                     kind SERVER_VALIDATION; docs/kernels.md, "Alignment"). */
typedef struct cubert_kernel_t {
  const char *name;
  cubert_kernel_cpu_fn_t cpu_entry;
  const char *cuda_entry_name;
  const void *cuda_image;
  size_t cuda_image_size;
  uint32_t shared_memory_bytes;
  cubert_dim3_t cube_dim;
  uint32_t buffer_count;
  uint32_t scalar_count;
  /* Bit i set: the kernel only reads buffer i (the race checker then reports
   * it as a read; clear bits count as read + write). 0: every buffer may be
   * written. */
  uint32_t read_only_mask;
  uint8_t buffer_align[CUBERT_KERNEL_MAX_BUFFERS];
} cubert_kernel_t;

/* The alignment a buffer slot needs when the descriptor leaves it 0 (the
 * size of f32 / u32 / i32 elements; a view of 1- or 2-byte elements on
 * sub-handles at odd offsets declares 1 or 2, one of 8-byte elements 8). */
#define CUBERT_KERNEL_DEFAULT_BUFFER_ALIGN 4u

CUBERT_EXTERN_C_END

/* Define `static const cubert_kernel_t var` for kernel `fn` (defined with
 * CUBERT_KERNEL). Expands to nothing under nvcc (the CUDA server builds its
 * descriptors on the host side, from C). */
#if !defined(__CUDACC__)
#define CUBERT_KERNEL_DESCRIPTOR(var, fn, buffers, scalars, shared_bytes, dim_x, dim_y, dim_z) \
  CUBERT_KERNEL_DESCRIPTOR_RO(var, fn, buffers, scalars, shared_bytes, dim_x, dim_y, dim_z, 0u)
/* The same with read_only_mask (bit i: buffer i is only read). */
#define CUBERT_KERNEL_DESCRIPTOR_RO(var, fn, buffers, scalars, shared_bytes, dim_x, dim_y, dim_z, \
                                    read_only)                                                  \
  CUBERT_KERNEL_UNUSED_ static const cubert_kernel_t var = {                                  \
      #fn, fn, #fn, NULL, 0, (shared_bytes), {(dim_x), (dim_y), (dim_z)}, (buffers),            \
      (scalars), (read_only), {0}}
#else
#define CUBERT_KERNEL_DESCRIPTOR(var, fn, buffers, scalars, shared_bytes, dim_x, dim_y, dim_z)
#define CUBERT_KERNEL_DESCRIPTOR_RO(var, fn, buffers, scalars, shared_bytes, dim_x, dim_y, dim_z, \
                                    read_only)
#endif

/* =====================================================================================
 * The dialect: CPU (C99) expansion
 * ===================================================================================== */
#if !defined(__CUDACC__)

/* Record an out-of-bounds access (cold path). A thread may run its cubes in
 * any order (the executor's threads steal from each other's ranges), so the
 * violation kept is the one in the lowest cube, the first in program order
 * within it. */
CUBERT_KERNEL_FN_ void cubert_kernel_oob_(cubert_kernel_cube_t *cube, uint32_t buffer_index,
                                          uint64_t index, uint64_t len, uint32_t is_write) {
  cubert_kernel_report_t *r = cube->report;
  if (!r) return;
  r->oob_count++;
  if ((cube->mode == CUBERT_KERNEL_MODE_VALIDATE || cube->mode == CUBERT_KERNEL_MODE_RACECHECK) &&
      (!r->has_violation || cube->pos_linear < r->cube_linear)) {
    r->has_violation = 1;
    r->buffer_index = buffer_index;
    r->element_index = index;
    r->buffer_length = len;
    r->is_write = is_write != 0;
    r->cube_pos = cube->pos;
    r->cube_linear = cube->pos_linear;
  }
}

/* The address an accessor uses: the element, or (out of bounds, not
 * UNCHECKED) the zero block for a load / the sink for a store. `unchecked` is
 * a compile-time constant in each of the two copies CUBERT_KERNEL makes of a
 * body, so the UNCHECKED copy has no test at all (its loops vectorize).
 * is_write: CUBERT_KERNEL_ACCESS_*. RACECHECK records the access. */
CUBERT_KERNEL_FN_ void *cubert_kernel_access_(cubert_kernel_cube_t *cube, int unchecked,
                                              const void *base, uint64_t len, uint64_t index,
                                              size_t elem_bytes, uint32_t buffer_index,
                                              uint32_t is_write, const char *name) {
  if (unchecked || CUBERT_KERNEL_LIKELY_(index < len)) {
    void *at = (void *)((const unsigned char *)base + index * elem_bytes);
    if (!unchecked && cube->race_note) cube->race_note(cube, at, buffer_index, name, index, is_write);
    return at;
  }
  cubert_kernel_oob_(cube, buffer_index, index, len, is_write);
  return is_write ? cube->oob_sink : (void *)cube->oob_zero;
}

CUBERT_KERNEL_FN_ cubert_kernel_unit_t cubert_kernel_unit_first_(const cubert_kernel_cube_t *cube) {
  cubert_kernel_unit_t u;
  u.x = u.y = u.z = 0;
  u.dim_x = cube->dim.x;
  u.dim_y = cube->dim.y;
  u.dim_z = cube->dim.z;
  u.linear = 0;
  u.base = cube->pos_linear * (uint64_t)cube->units;
  return u;
}

/* A phase's start and end (once per phase) and each unit's start: the
 * checked copy keeps the unit and the phase epoch for the race checker. */
CUBERT_KERNEL_FN_ cubert_kernel_unit_t cubert_kernel_phase_begin_(cubert_kernel_cube_t *cube,
                                                                  int unchecked) {
  cubert_kernel_unit_t u = cubert_kernel_unit_first_(cube);
  if (!unchecked) cube->phase++;
  if (cube->scratch_short) u.z = u.dim_z; /* the cube runs again: no phase now */
  return u;
}

/* VALIDATE: the accessors' note while a unit's CUBERT_UNIT_DONE has run (no
 * other note is set then: RACECHECK's own note checks the same). An access
 * means the unit went on: CUBERT_UNIT_DONE was used in a loop nested in the
 * phase, where it continues that loop. Reported like a race of kind
 * CUBERT_KERNEL_RACE_UNIT_DONE (6, cubert/kernel_race.h): the launch fails. */
CUBERT_KERNEL_FN_ void cubert_kernel_after_unit_done_(cubert_kernel_cube_t *cube,
                                                      const void *address, uint32_t view,
                                                      const char *name, uint64_t index,
                                                      uint32_t access) {
  cubert_kernel_report_t *r = cube->report;
  (void)address;
  if (!r) return;
  r->race_count++;
  if (r->race_kind) return;
  r->race_kind = 6u; /* CUBERT_KERNEL_RACE_UNIT_DONE */
  r->race_phase = (cube->phase + 1u) / 2u;
  r->race_view = view;
  r->race_access = access | (access << 4);
  r->race_unit_a = cube->unit;
  r->race_unit_b = cube->unit;
  r->race_cube_a = cube->pos_linear;
  r->race_cube_b = cube->pos_linear;
  r->race_element = index;
  r->race_name = name;
}

/* A unit's CUBERT_UNIT_DONE state ends with the unit (checked copy). */
CUBERT_KERNEL_FN_ void cubert_kernel_unit_done_clear_(cubert_kernel_cube_t *cube) {
  if (cube->unit_done) {
    cube->unit_done = 0;
    if (cube->race_note == cubert_kernel_after_unit_done_) cube->race_note = 0;
  }
}

CUBERT_KERNEL_FN_ int cubert_kernel_phase_end_(cubert_kernel_cube_t *cube, int unchecked) {
  if (!unchecked) {
    cube->phase++;
    cube->unit = CUBERT_KERNEL_UNIFORM;
    cubert_kernel_unit_done_clear_(cube);
  }
  return 0;
}

CUBERT_KERNEL_FN_ int cubert_kernel_unit_enter_(cubert_kernel_cube_t *cube, int unchecked,
                                                uint64_t linear) {
  if (!unchecked) {
    cube->unit = (uint32_t)linear;
    cubert_kernel_unit_done_clear_(cube);
  }
  return 1;
}

CUBERT_KERNEL_FN_ int cubert_kernel_unit_done_(cubert_kernel_cube_t *cube, int unchecked) {
  if (!unchecked) {
    cube->unit_done = 1;
    if (!cube->race_note && cube->mode == CUBERT_KERNEL_MODE_VALIDATE)
      cube->race_note = cubert_kernel_after_unit_done_;
  }
  return 1;
}

/* CUBERT_SHARED's and CUBERT_UNIT_VAR's storage: handed out in order from
 * the cube's block (reset for every cube). When the block is too small the
 * cube is marked short (it then runs no phase and no plane operation, and
 * the runner runs it again with a block of scratch_used bytes); meanwhile the
 * declaration gets the never-written zero block, which uniform code may read. */
CUBERT_KERNEL_FN_ void *cubert_kernel_scratch_(cubert_kernel_cube_t *cube, uint64_t bytes) {
  uint64_t at = (cube->scratch_used + 63u) & ~(uint64_t)63u;
  cube->scratch_used = at + bytes;
  if (at + bytes > cube->scratch_bytes || cube->scratch_short) {
    cube->scratch_short = 1;
    return (void *)cube->oob_zero;
  }
  return cube->scratch + at;
}

CUBERT_KERNEL_FN_ void *cubert_kernel_unit_var_(cubert_kernel_cube_t *cube, uint64_t bytes) {
  if (!cube->plane_scratch) /* the plane operations' scratch, with the first unit variable */
    cube->plane_scratch = (unsigned char *)cubert_kernel_scratch_(
        cube, (uint64_t)cube->units * CUBERT_KERNEL_PLANE_ELEMENT_BYTES);
  return cubert_kernel_scratch_(cube, bytes * cube->units);
}

/* The entry point runs one of two copies of the body: one where every access
 * is raw (the launch is UNCHECKED) and one where every access is tested
 * (CHECKED, VALIDATE, RACECHECK). The body is inlined into both, so in the
 * first the accessors compile to plain loads and stores and the unit loops
 * vectorize. */
#define CUBERT_KERNEL(name)                                                                  \
  CUBERT_KERNEL_BODY_FN_ void name##_cubert_body_(const cubert_kernel_args_t *cubert_args,   \
                                                  cubert_kernel_cube_t *cubert_cube,         \
                                                  const int cubert_unchecked_,               \
                                                  cubert_kernel_fast_t *cubert_fast_);       \
  CUBERT_KERNEL_UNUSED_ static void name(const cubert_kernel_args_t *cubert_args,            \
                                         cubert_kernel_cube_t *cubert_cube);                 \
  static void name(const cubert_kernel_args_t *cubert_args, cubert_kernel_cube_t *cubert_cube) { \
    cubert_kernel_fast_t cubert_fast = CUBERT_KERNEL_FAST_INIT_;                            \
    int cubert_raw = cubert_cube->mode == CUBERT_KERNEL_MODE_UNCHECKED;                      \
    if (!cubert_raw) { /* a full cube leaves it at CUBERT_CUBE_BOUNDS_DONE (kernel_bounds.h) */ \
      name##_cubert_body_(cubert_args, cubert_cube, 0, &cubert_fast);                        \
      cubert_raw = (int)cubert_fast.full;                                                    \
      if (cubert_raw && !cubert_cube->scratch_short) { /* the raw copy declares again */     \
        cubert_cube->scratch_used = 0;                                                       \
        cubert_cube->plane_scratch = 0;                                                      \
      }                                                                                      \
    }                                                                                        \
    if (cubert_raw) name##_cubert_body_(cubert_args, cubert_cube, 1, &cubert_fast);          \
  }                                                                                          \
  CUBERT_KERNEL_BODY_FN_ void name##_cubert_body_(                                           \
      const cubert_kernel_args_t *cubert_args CUBERT_KERNEL_UNUSED_,                         \
      cubert_kernel_cube_t *cubert_cube CUBERT_KERNEL_UNUSED_,                               \
      const int cubert_unchecked_ CUBERT_KERNEL_UNUSED_,                                     \
      cubert_kernel_fast_t *cubert_fast_ CUBERT_KERNEL_UNUSED_)

#define CUBE_POS_X (cubert_cube->pos.x)
#define CUBE_POS_Y (cubert_cube->pos.y)
#define CUBE_POS_Z (cubert_cube->pos.z)
#define CUBE_POS (cubert_cube->pos_linear)
#define CUBE_COUNT_X (cubert_cube->count.x)
#define CUBE_COUNT_Y (cubert_cube->count.y)
#define CUBE_COUNT_Z (cubert_cube->count.z)
#define CUBE_COUNT (cubert_cube->count_linear)
#define CUBE_DIM_X (cubert_cube->dim.x)
#define CUBE_DIM_Y (cubert_cube->dim.y)
#define CUBE_DIM_Z (cubert_cube->dim.z)
#define CUBE_DIM (cubert_cube->units)
#define UNIT_POS_X (cubert_unit.x)
#define UNIT_POS_Y (cubert_unit.y)
#define UNIT_POS_Z (cubert_unit.z)
#define UNIT_POS (cubert_unit.linear)
#define ABSOLUTE_POS (cubert_unit.base + cubert_unit.linear)

/* Three nested counted loops (z, y, x; `linear` counts along), so the
 * innermost one is a plain loop over x the compiler can optimize. The
 * barriers at both ends are implicit: the units of a phase all finish before
 * anything after it runs. In the checked copy the phase's start and end and
 * each unit's start are noted (constant-folded away in the UNCHECKED one). */
#define CUBERT_PHASE                                                                         \
  for (cubert_kernel_unit_t cubert_unit =                                                    \
       cubert_kernel_phase_begin_(cubert_cube, cubert_unchecked_);                       \
       cubert_unit.z < cubert_unit.dim_z ||                                                  \
       cubert_kernel_phase_end_(cubert_cube, cubert_unchecked_);                             \
       cubert_unit.z++)                                                                      \
    for (cubert_unit.y = 0; cubert_unit.y < cubert_unit.dim_y; cubert_unit.y++)              \
      for (cubert_unit.x = 0;                                                                \
           cubert_unit.x < cubert_unit.dim_x &&                                              \
           cubert_kernel_unit_enter_(cubert_cube, cubert_unchecked_, cubert_unit.linear);    \
           cubert_unit.x++, cubert_unit.linear++)

/* `continue` of the unit loop: valid at the phase's own level, not inside a
 * loop nested in the phase. Inside CUBERT_UNIT_FOR it does not compile (the
 * case label names the loop's variable, not a constant); inside another loop
 * nested in the phase it would continue that loop: VALIDATE and RACECHECK
 * fail the launch at the unit's next access. The switch keeps it one
 * statement. */
#define CUBERT_UNIT_DONE                                                                     \
  switch (cubert_kernel_unit_done_(cubert_cube, cubert_unchecked_))                          \
  case CUBERT_UNIT_DONE_cannot_leave_a_CUBERT_UNIT_FOR_loop:                                 \
  default:                                                                                   \
    continue

/* A view over this cube's part of the block (never zeroed: the content is
 * unspecified at the cube's start, as on a GPU). */
#define CUBERT_SHARED(type, name, count)                                                     \
  typedef type cubert_elem_##name##_;                                                        \
  struct {                                                                                   \
    cubert_elem_##name##_ *ptr;                                                              \
    uint64_t len;                                                                            \
    uint32_t index;                                                                          \
    char check_[(uint64_t)sizeof(type) * (count) <= CUBERT_KERNEL_MAX_STATIC_SHARED ? 1 : -1]; \
    uint64_t length;                                                                         \
    uint32_t bounded;                                                                        \
  } name = {(cubert_elem_##name##_ *)cubert_kernel_scratch_(                                \
                cubert_cube, (uint64_t)sizeof(type) * (count)),                              \
            (uint64_t)(count), CUBERT_KERNEL_SHARED_VIEW | (uint32_t)__LINE__, {0},          \
            (uint64_t)(count), 0}
#define CUBERT_SHARED_DYNAMIC(type, name)                                                    \
  typedef type cubert_elem_##name##_;                                                        \
  struct {                                                                                   \
    cubert_elem_##name##_ *ptr;                                                              \
    uint64_t len;                                                                            \
    uint32_t index;                                                                          \
    uint64_t length;                                                                         \
    uint32_t bounded;                                                                        \
  } name = {(cubert_elem_##name##_ *)cubert_cube->dynamic_shared,                           \
            cubert_cube->dynamic_shared_bytes / sizeof(type), CUBERT_KERNEL_SHARED_VIEW,     \
            cubert_cube->dynamic_shared_bytes / sizeof(type), 0}
#define CUBERT_SHARED_DYNAMIC_BYTES (cubert_cube->dynamic_shared_bytes)

/* CUBE_DIM copies, from the cube's block (sized to the cube). */
#define CUBERT_UNIT_VAR(type, name)                                                          \
  type *const name = (type *)cubert_kernel_unit_var_(cubert_cube, (uint64_t)sizeof(type))
#define CUBERT_UNIT(name) (name[cubert_unit.linear])

/* The view: element typedef (for the accessors' casts), pointer, the length
 * the accessors check (`len`: the view's, or in VALIDATE a declared cube
 * bound, kernel_bounds.h), slot, a compile-time check of the slot and
 * element size, the view's own length (CUBERT_LEN) and whether a bound was
 * declared. */
#define CUBERT_BUFFER(type, name, slot) CUBERT_BUFFER_ALIGNED_(type, name, slot, 0u)
/* `align` > 0 (line views, cubert/kernel_line.h): a buffer whose address is
 * not a multiple of `align` has length 0 for the accessors outside UNCHECKED. */
#define CUBERT_BUFFER_ALIGNED_(type, name, slot, align)                                      \
  typedef type cubert_elem_##name##_;                                                        \
  struct {                                                                                   \
    cubert_elem_##name##_ *ptr;                                                              \
    uint64_t len;                                                                            \
    uint32_t index;                                                                          \
    char check_[((slot) < CUBERT_KERNEL_MAX_BUFFERS &&                                       \
                 sizeof(type) <= CUBERT_KERNEL_MAX_ELEMENT_BYTES) ? 1 : -1];                \
    uint64_t length;                                                                         \
    uint32_t bounded;                                                                        \
  } name = {(cubert_elem_##name##_ *)cubert_args->buffers[(slot)].ptr,                      \
            cubert_kernel_view_len_(cubert_cube, cubert_fast_,                               \
                                    cubert_kernel_aligned_len_(                              \
                                        cubert_cube, cubert_args->buffers[(slot)].ptr,       \
                                        cubert_args->buffers[(slot)].size_bytes / sizeof(type), \
                                        (align))),                                           \
            (uint32_t)(slot), {0}, cubert_args->buffers[(slot)].size_bytes / sizeof(type), 0}

/* The element's address: in the UNCHECKED copy of a body a plain typed
 * pointer (`i` evaluated once on either side of the ?:). */
#define CUBERT_ADDR_(name, i, is_write)                                                      \
  (cubert_unchecked_ ? (name).ptr + (uint64_t)(i)                                            \
                     : (cubert_elem_##name##_ *)cubert_kernel_access_(                       \
                           cubert_cube, 0, (name).ptr, (name).len, (uint64_t)(i),            \
                           sizeof(*(name).ptr), (name).index, (is_write), #name))
#define CUBERT_LOAD(name, i) (*(const cubert_elem_##name##_ *)CUBERT_ADDR_(name, i, 0))
#define CUBERT_STORE(name, i, value) ((void)(*CUBERT_ADDR_(name, i, 1) = (value)))

/* =====================================================================================
 * The dialect: CUDA expansion
 * ===================================================================================== */
#else /* __CUDACC__ */

template <typename T> struct cubert_kernel_view_ {
  T *ptr;
  uint64_t len;    /* what the accessors check (a declared bound in VALIDATE) */
  uint32_t index;
  uint64_t length; /* the view's length (CUBERT_LEN) */
};
template <typename T> struct cubert_kernel_unconst_ { typedef T type; };
template <typename T> struct cubert_kernel_unconst_<const T> { typedef T type; };

/* Zero bytes an out-of-bounds load reads instead (any element type). */
static __device__ __align__(64) const unsigned char
    cubert_kernel_oob_zero_[CUBERT_KERNEL_MAX_ELEMENT_BYTES] = {0};

/* Note an out-of-bounds access of this unit (registers only). */
static __device__ __forceinline__ void cubert_kernel_oob_(cubert_kernel_cube_t *cube,
                                                          uint32_t buffer_index, uint64_t index,
                                                          uint64_t len, uint32_t is_write) {
  if (cube->oob_count++ == 0u) {
    cube->oob_buffer = buffer_index;
    cube->oob_index = index;
    cube->oob_len = len;
    cube->oob_is_write = is_write;
  }
}

/* The unit's out-of-bounds accesses into the launch's report, once, when
 * the body returns: every access counted; in VALIDATE the first unit to
 * claim the record writes its first access (not ordered by cube on the
 * GPU). By value: nothing of the cube's context lives in memory. */
static __device__ __noinline__ void cubert_kernel_oob_report_(
    cubert_kernel_report_t *r, uint32_t mode, uint64_t count, uint32_t buffer_index,
    uint64_t index, uint64_t len, uint32_t is_write) {
  if (!r) return;
  atomicAdd((unsigned long long *)&r->oob_count, (unsigned long long)count);
  if (mode == CUBERT_KERNEL_MODE_VALIDATE && atomicCAS(&r->has_violation, 0u, 1u) == 0u) {
    r->buffer_index = buffer_index;
    r->element_index = index;
    r->buffer_length = len;
    r->is_write = is_write;
    r->cube_pos.x = blockIdx.x;
    r->cube_pos.y = blockIdx.y;
    r->cube_pos.z = blockIdx.z;
    r->cube_linear = (uint64_t)blockIdx.x +
                     (uint64_t)gridDim.x * ((uint64_t)blockIdx.y + (uint64_t)gridDim.y * blockIdx.z);
  }
}

/* `unchecked`: a constant in each of the body's two copies (CUBERT_KERNEL), so
 * the UNCHECKED copy's accesses are plain loads and stores, no test. A
 * checked load reads its element or, out of bounds, zeros
 * (cubert_kernel_oob_zero_) with no branch around the load, and notes the
 * access after it. */
template <typename T>
static __device__ __forceinline__ typename cubert_kernel_unconst_<T>::type
cubert_kernel_load_(cubert_kernel_cube_t *cube, const cubert_kernel_view_<T> &v, uint64_t i,
                    bool unchecked) {
  typedef typename cubert_kernel_unconst_<T>::type U;
  if (unchecked || cube->mode == CUBERT_KERNEL_MODE_UNCHECKED) return v.ptr[i];
  const bool in = i < v.len;
  const U x = *(in ? (const U *)(v.ptr + i) : (const U *)(const void *)cubert_kernel_oob_zero_);
  if (!in) cubert_kernel_oob_(cube, v.index, i, v.len, 0);
  return x;
}

template <typename T>
static __device__ __forceinline__ void cubert_kernel_store_(
    cubert_kernel_cube_t *cube, const cubert_kernel_view_<T> &v, uint64_t i,
    typename cubert_kernel_unconst_<T>::type value, bool unchecked) {
  if (unchecked || i < v.len || cube->mode == CUBERT_KERNEL_MODE_UNCHECKED) {
    v.ptr[i] = value;
    return;
  }
  cubert_kernel_oob_(cube, v.index, i, v.len, 1);
}

static __device__ __forceinline__ uint32_t cubert_kernel_dynamic_smem_bytes_(void) {
  uint32_t n;
  asm volatile("mov.u32 %0, %%dynamic_smem_size;" : "=r"(n));
  return n;
}

/* Programmatic dependent launch (sm_90 and later; docs/recording.md, "CUDA
 * graphs"): every entry first lets the next kernel of a CUDA graph launch
 * early (griddepcontrol.launch_dependents: its cubes are scheduled while
 * these still run) and then waits until the kernels before it completed
 * and their memory is visible (griddepcontrol.wait), before it touches any
 * memory. Outside a graph edge that asks for it (a plain launch) both are
 * no-ops. The image marks the entries compiled so with a device word
 * NAME_cubert_grid_wait_ (cuModuleGetGlobal finds it): the CUDA driver
 * links two graph nodes programmatically only when the second one has it
 * (a PTX image for an older architecture, JIT-compiled on a newer GPU, has
 * neither the wait nor the word). */
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define CUBERT_KERNEL_GRID_WAIT_MARK_(name) \
  extern "C" __device__ const unsigned int name##_cubert_grid_wait_ = 1u;
#define CUBERT_KERNEL_GRID_WAIT_()                                                           \
  asm volatile("griddepcontrol.launch_dependents;\n\tgriddepcontrol.wait;" ::: "memory")
#else
#define CUBERT_KERNEL_GRID_WAIT_MARK_(name)
#define CUBERT_KERNEL_GRID_WAIT_() ((void)0)
#endif

/* The body is inlined twice: an UNCHECKED launch runs the copy whose
 * cubert_unchecked_ is the constant true (its accesses test nothing: no
 * compare and branch per load in an inner loop, fewer registers), every other
 * mode the checking copy (as the CPU expansion's two copies). */
#define CUBERT_KERNEL(name)                                                                  \
  static __device__ __forceinline__ void name##_cubert_body_(                                \
      const cubert_kernel_args_t *cubert_args, cubert_kernel_cube_t *cubert_cube,            \
      const bool cubert_unchecked_);                                                         \
  CUBERT_KERNEL_GRID_WAIT_MARK_(name)                                                        \
  extern "C" __global__ void name(const cubert_kernel_args_t cubert_args_value,              \
                                  uint32_t cubert_mode, cubert_kernel_report_t *cubert_report) { \
    cubert_kernel_cube_t cubert_cube_value;                                                  \
    CUBERT_KERNEL_GRID_WAIT_();                                                              \
    cubert_cube_value.mode = cubert_mode;                                                    \
    cubert_cube_value.report = cubert_report;                                                \
    cubert_cube_value.oob_count = 0u;                                                        \
    cubert_cube_value.oob_buffer = 0u;                                                       \
    cubert_cube_value.oob_index = 0u;                                                        \
    cubert_cube_value.oob_len = 0u;                                                          \
    cubert_cube_value.oob_is_write = 0u;                                                     \
    if (cubert_mode == CUBERT_KERNEL_MODE_UNCHECKED) {                                       \
      name##_cubert_body_(&cubert_args_value, &cubert_cube_value, true);                     \
      return;                                                                                \
    }                                                                                        \
    name##_cubert_body_(&cubert_args_value, &cubert_cube_value, false);                      \
    if (cubert_cube_value.oob_count)                                                         \
      cubert_kernel_oob_report_(cubert_report, cubert_mode, cubert_cube_value.oob_count,     \
                                cubert_cube_value.oob_buffer, cubert_cube_value.oob_index,   \
                                cubert_cube_value.oob_len, cubert_cube_value.oob_is_write);  \
  }                                                                                          \
  static __device__ __forceinline__ void name##_cubert_body_(                                \
      const cubert_kernel_args_t *cubert_args, cubert_kernel_cube_t *cubert_cube,            \
      const bool cubert_unchecked_ CUBERT_KERNEL_UNUSED_)

#define CUBE_POS_X (blockIdx.x)
#define CUBE_POS_Y (blockIdx.y)
#define CUBE_POS_Z (blockIdx.z)
#define CUBE_POS                                                                             \
  ((uint64_t)blockIdx.x +                                                                    \
   (uint64_t)gridDim.x * ((uint64_t)blockIdx.y + (uint64_t)gridDim.y * blockIdx.z))
#define CUBE_COUNT_X (gridDim.x)
#define CUBE_COUNT_Y (gridDim.y)
#define CUBE_COUNT_Z (gridDim.z)
#define CUBE_COUNT ((uint64_t)gridDim.x * gridDim.y * gridDim.z)
#define CUBE_DIM_X (blockDim.x)
#define CUBE_DIM_Y (blockDim.y)
#define CUBE_DIM_Z (blockDim.z)
#define CUBE_DIM (blockDim.x * blockDim.y * blockDim.z)
#define UNIT_POS_X (threadIdx.x)
#define UNIT_POS_Y (threadIdx.y)
#define UNIT_POS_Z (threadIdx.z)
#define UNIT_POS (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z))
#define ABSOLUTE_POS (CUBE_POS * (uint64_t)CUBE_DIM + UNIT_POS)

/* A barrier, the block, a barrier: CUBERT_UNIT_DONE (`continue`) and the
 * block's end both reach the second one (the loop's step). */
#define CUBERT_PHASE                                                                         \
  for (int cubert_phase_once_ = (__syncthreads(), 0); cubert_phase_once_ < 1;                \
       __syncthreads(), ++cubert_phase_once_)

/* CUBERT_UNIT_DONE after a CUBERT_UNIT_FOR in the same block: nvcc's note
 * that old for-init scoping would have found the loop's variable. */
#pragma nv_diag_suppress 780
#define CUBERT_UNIT_DONE                                                                     \
  switch (1)                                                                                 \
  case CUBERT_UNIT_DONE_cannot_leave_a_CUBERT_UNIT_FOR_loop:                                 \
  default:                                                                                   \
    continue

#define CUBERT_SHARED(type, name, count)                                                     \
  __shared__ type name##_cubert_storage_[count];                                             \
  cubert_kernel_view_<type> name = {name##_cubert_storage_, (uint64_t)(count),               \
                                    CUBERT_KERNEL_SHARED_VIEW | (uint32_t)__LINE__,          \
                                    (uint64_t)(count)}
#define CUBERT_SHARED_DYNAMIC(type, name)                                                    \
  extern __shared__ __align__(16) unsigned char cubert_dynamic_shared_[];                    \
  cubert_kernel_view_<type> name = {(type *)cubert_dynamic_shared_,                          \
                                    (uint64_t)cubert_kernel_dynamic_smem_bytes_() / sizeof(type), \
                                    CUBERT_KERNEL_SHARED_VIEW,                               \
                                    (uint64_t)cubert_kernel_dynamic_smem_bytes_() / sizeof(type)}
#define CUBERT_SHARED_DYNAMIC_BYTES ((uint64_t)cubert_kernel_dynamic_smem_bytes_())

#define CUBERT_UNIT_VAR(type, name) type name
#define CUBERT_UNIT(name) (name)

#define CUBERT_BUFFER(type, name, slot) CUBERT_BUFFER_ALIGNED_(type, name, slot, 0u)
#define CUBERT_BUFFER_ALIGNED_(type, name, slot, align)                                      \
  cubert_kernel_view_<type> name = {                                                         \
      (type *)cubert_args->buffers[(slot)].ptr,                                              \
      cubert_kernel_aligned_len_(cubert_cube, cubert_args->buffers[(slot)].ptr,             \
                                 cubert_args->buffers[(slot)].size_bytes / sizeof(type),     \
                                 (align)),                                                   \
      (uint32_t)(slot), cubert_args->buffers[(slot)].size_bytes / sizeof(type)}

#define CUBERT_LOAD(name, i) cubert_kernel_load_(cubert_cube, (name), (uint64_t)(i), cubert_unchecked_)
#define CUBERT_STORE(name, i, value)                                                         \
  cubert_kernel_store_(cubert_cube, (name), (uint64_t)(i), (value), cubert_unchecked_)

#endif /* __CUDACC__ */

/* ---- common to both expansions ---------------------------------------------------------- */

#define ABSOLUTE_POS_X (CUBE_POS_X * CUBE_DIM_X + UNIT_POS_X)
#define ABSOLUTE_POS_Y (CUBE_POS_Y * CUBE_DIM_Y + UNIT_POS_Y)
#define ABSOLUTE_POS_Z (CUBE_POS_Z * CUBE_DIM_Z + UNIT_POS_Z)

/* Uniform: true when every unit of this cube has ABSOLUTE_POS < n (the cube
 * lies wholly below n). A kernel whose guard is `ABSOLUTE_POS < n` can run
 * its full cubes through a phase without the guard; on the CPU that phase is
 * a plain loop the compiler vectorizes (docs/kernels.md, "Kernels that
 * vectorize on the CPU"). */
#define CUBERT_CUBE_WITHIN(n) ((CUBE_POS + 1u) * (uint64_t)CUBE_DIM <= (uint64_t)(n))

/* Length (elements) of a view. */
#define CUBERT_LEN(name) ((name).length)

#define CUBERT_SCALAR_U32(name, slot) const uint32_t name = (uint32_t)cubert_args->scalars[(slot)]
#define CUBERT_SCALAR_I32(name, slot)                                                        \
  const int32_t name = (int32_t)(uint32_t)cubert_args->scalars[(slot)]
#define CUBERT_SCALAR_U64(name, slot) const uint64_t name = cubert_args->scalars[(slot)]
#define CUBERT_SCALAR_I64(name, slot) const int64_t name = (int64_t)cubert_args->scalars[(slot)]
#define CUBERT_SCALAR_F32(name, slot)                                                        \
  const float name = cubert_kernel_bits_f32(cubert_args->scalars[(slot)])
#define CUBERT_SCALAR_F64(name, slot)                                                        \
  const double name = cubert_kernel_bits_f64(cubert_args->scalars[(slot)])

/* The execution model's primitives, one concept per header. */
#include "cubert/kernel_race.h"
#include "cubert/kernel_sync.h"
#include "cubert/kernel_atomic.h"
#include "cubert/kernel_plane.h"
#include "cubert/kernel_math.h"

/* A view's checked length given its alignment need (`align` 0: none). */
CUBERT_KERNEL_FN_ uint64_t cubert_kernel_aligned_len_(const cubert_kernel_cube_t *cube,
                                                      const void *ptr, uint64_t len,
                                                      uint32_t align) {
  if (align && cube->mode != CUBERT_KERNEL_MODE_UNCHECKED && ((uintptr_t)ptr % align) != 0)
    return 0;
  return len;
}

/* Declared cube bounds and the CHECKED fast path; Line access. */
#include "cubert/kernel_bounds.h"
#include "cubert/kernel_line.h"

#endif /* CUBERT_KERNEL_H */
