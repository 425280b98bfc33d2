/* SPDX-License-Identifier: MIT */
/*
 * tests/embedded/cortex-m/startup.c: bare-metal start-up for the Cortex-M test harness
 * (QEMU `-M mps2-an386`, memory map in an386.ld).
 *
 * The vector table, the reset handler (FPU on, .data copied, .bss zeroed, the stack
 * painted, constructors run, main called), a fault handler that prints the faulting
 * PC over semihosting and resumes in the runner (the test fails, the run goes on), the heap for newlib's malloc (_sbrk over the PSRAM block), and
 * _exit through semihosting SYS_EXIT_EXTENDED so QEMU's exit status is the program's.
 * newlib's librdimon provides the rest of stdio over semihosting.
 *
 * This file belongs to the test harness only: the library itself needs none of it.
 * Built with EMBEDDED_NEWLIB=0 (examples/embedded/arena_demo.c on the target) it uses no
 * newlib at all: no stdio handles to open, no heap (_sbrk): a program linked with it that
 * calls malloc does not link.
 */
#include <stddef.h>
#include <stdint.h>

#include "embedded_target.h"

#ifndef EMBEDDED_NEWLIB
#define EMBEDDED_NEWLIB 1
#endif

extern uint32_t __data_start[], __data_end[], __data_load[];
extern uint32_t __bss_start[], __bss_end[];
extern uint32_t __stack_bottom[], __stack_top[];
extern char __heap_start[], __heap_end[];
typedef void (*init_fn_t)(void);
extern init_fn_t __preinit_array_start[], __preinit_array_end[];
extern init_fn_t __init_array_start[], __init_array_end[];

int main(int argc, char **argv);
void initialise_monitor_handles(void); /* newlib librdimon: stdin/stdout/stderr handles */
void cubert_reset_handler(void);
void cubert_reset_c(void);
void cubert_fault_handler(void);
void cubert_fault_report(uint32_t *frame, uint32_t exc_return, uint32_t overflowed);
void cubert_default_handler(void);
void _exit(int status);
void *_sbrk(ptrdiff_t incr);

#define STACK_PAINT 0xC5C5C5C5u

/* ---- semihosting ------------------------------------------------------------------ */
#define SH_SYS_WRITE0 0x04
#define SH_SYS_GET_CMDLINE 0x15
#define SH_SYS_EXIT_EXTENDED 0x20
#define SH_ADP_STOPPED_APPLICATION_EXIT 0x20026

static uint32_t semihost(uint32_t op, const void *arg) {
  register uint32_t r0 __asm__("r0") = op;
  register const void *r1 __asm__("r1") = arg;
  __asm__ volatile("bkpt 0xab" : "+r"(r0) : "r"(r1) : "memory");
  return r0;
}

void embedded_write0(const char *text) { (void)semihost(SH_SYS_WRITE0, text); }

void _exit(int status) {
  uint32_t block[2];
  block[0] = SH_ADP_STOPPED_APPLICATION_EXIT;
  block[1] = (uint32_t)status;
  (void)semihost(SH_SYS_EXIT_EXTENDED, block);
  for (;;) {
  }
}

/* ---- heap for the harness's malloc ------------------------------------------------ */
#if EMBEDDED_NEWLIB
static char *g_brk;
static char *g_brk_peak;

void *_sbrk(ptrdiff_t incr) {
  char *prev;
  if (!g_brk) g_brk = g_brk_peak = __heap_start;
  if (incr > 0 && (size_t)incr > (size_t)(__heap_end - g_brk)) return (void *)-1;
  if (incr < 0 && (size_t)-incr > (size_t)(g_brk - __heap_start)) return (void *)-1;
  prev = g_brk;
  g_brk += incr;
  if (g_brk > g_brk_peak) g_brk_peak = g_brk;
  return prev;
}

size_t embedded_heap_peak(void) { return g_brk_peak ? (size_t)(g_brk_peak - __heap_start) : 0; }
#else
size_t embedded_heap_peak(void) { return 0; }
#endif
size_t embedded_heap_size(void) { return (size_t)(__heap_end - __heap_start); }

/* ---- painted stack ---------------------------------------------------------------- */
static uint32_t *current_sp(void) {
  uint32_t *sp;
  __asm__ volatile("mov %0, sp" : "=r"(sp));
  return sp;
}

/* Paints every word below the caller's frame (nothing below sp is live: no interrupt
 * is enabled). Called by the reset handler and by the runner before each test. */
void embedded_stack_paint(void) {
  uint32_t *p = __stack_bottom;
  uint32_t *end = current_sp() - 16; /* this function's own frame stays clear */
  while (p < end) *p++ = STACK_PAINT;
}

size_t embedded_stack_used(void) {
  const uint32_t *p = __stack_bottom;
  while (p < __stack_top && *p == STACK_PAINT) p++;
  return (size_t)((const char *)__stack_top - (const char *)p);
}

size_t embedded_stack_size(void) {
  return (size_t)((const char *)__stack_top - (const char *)__stack_bottom);
}

/* ---- command line (SYS_GET_CMDLINE: QEMU passes the kernel path and -append) -------- */
#define MAX_ARGS 32
static char g_cmdline[512];
static char *g_argv[MAX_ARGS + 1];

static int command_line(void) {
  uint32_t block[2];
  int argc = 0;
  char *p = g_cmdline;
  block[0] = (uint32_t)(uintptr_t)g_cmdline;
  block[1] = sizeof g_cmdline - 1;
  if (semihost(SH_SYS_GET_CMDLINE, block) != 0) g_cmdline[0] = 0;
  g_cmdline[sizeof g_cmdline - 1] = 0;
  while (*p && argc < MAX_ARGS) {
    while (*p == ' ') *p++ = 0;
    if (!*p) break;
    g_argv[argc++] = p;
    while (*p && *p != ' ') p++;
  }
  g_argv[argc] = NULL;
  return argc;
}

/* ---- reset ------------------------------------------------------------------------ */
void cubert_reset_c(void) {
  uint32_t *src = __data_load, *dst = __data_start;
  init_fn_t *fn;
  int argc;
  while (dst < __data_end) *dst++ = *src++;
  for (dst = __bss_start; dst < __bss_end; dst++) *dst = 0;
  embedded_stack_paint();
#if EMBEDDED_NEWLIB
  initialise_monitor_handles();
#endif
  for (fn = __preinit_array_start; fn < __preinit_array_end; fn++) (*fn)();
  for (fn = __init_array_start; fn < __init_array_end; fn++) (*fn)();
  argc = command_line();
  _exit(main(argc, g_argv));
}

/* The FPU (CP10, CP11) is enabled before any C code can touch a floating-point register:
 * with -mfloat-abi=hard the compiler may use them anywhere. */
__attribute__((naked)) void cubert_reset_handler(void) {
  __asm__ volatile(
      "ldr r0, =0xE000ED88\n"  /* CPACR */
      "ldr r1, [r0]\n"
      "orr r1, r1, #(0xF << 20)\n"
      "str r1, [r0]\n"
      "dsb\n"
      "isb\n"
      "ldr r0, =__stack_top\n"
      "mov sp, r0\n"
      "b cubert_reset_c\n");
}

/* ---- faults ------------------------------------------------------------------------- */
static void put_hex(char *out, uint32_t v) {
  int i;
  for (i = 7; i >= 0; i--) {
    out[i] = "0123456789abcdef"[v & 0xF];
    v >>= 4;
  }
}

/* Prints the fault, then either resumes the thread in the runner's recovery function (the
 * stacked PC is replaced and the exception returns: the faulting test fails, the run goes
 * on) or, with no test running, ends the run with status 3. */
void cubert_fault_report(uint32_t *frame, uint32_t exc_return, uint32_t overflowed) {
  static char line[] = "  fault: pc=0x........ lr=0x........ cfsr=0x........ hfsr=0x........\n";
  volatile uint32_t *cfsr = (volatile uint32_t *)0xE000ED28;
  volatile uint32_t *hfsr = (volatile uint32_t *)0xE000ED2C;
  embedded_resume_fn_t resume;
  (void)exc_return;
  put_hex(line + 14, frame[6]);
  put_hex(line + 28, frame[5]);
  put_hex(line + 44, *cfsr);
  put_hex(line + 60, *hfsr);
  if (overflowed) embedded_write0("  fault with the stack pointer below the stack: overflow\n");
  else embedded_write0(line);
  resume = embedded_fault_hook();
  if (!resume) {
    embedded_write0("fault outside a test: stopping\n");
    _exit(3);
  }
  *cfsr = *cfsr; /* write-one-to-clear the fault status */
  *hfsr = *hfsr;
  *(volatile uint32_t *)0xE000EF34 &= ~1u; /* FPCCR.LSPACT: no lazy FP state to save */
  frame[6] = (uint32_t)(uintptr_t)resume & ~1u; /* PC (Thumb bit goes in xPSR) */
  frame[7] = 0x01000000u;                       /* xPSR: T bit only */
}

/* Passes the stacked exception frame (MSP or PSP, per EXC_RETURN bit 2) to the report.
 * When the stack pointer ran below the stack (an overflow: the frame went to unbacked
 * memory, and the handler's own pushes would too), the handler moves to a known block
 * near the stack's bottom, which the overflowing test no longer needs, and builds the
 * frame it returns through there (thread mode, MSP, basic frame). */
__attribute__((naked)) void cubert_fault_handler(void) {
  __asm__ volatile(
      "tst lr, #4\n"
      "ite eq\n"
      "mrseq r0, msp\n"
      "mrsne r0, psp\n"
      "mov r1, lr\n"
      "ldr r2, =__stack_bottom + 1024\n"
      "cmp r0, r2\n"
      "bhs 1f\n"
      "mov r0, r2\n"
      "mov sp, r2\n"
      "ldr lr, =0xFFFFFFF9\n"
      "mov r1, lr\n"
      "movs r2, #1\n"
      "b cubert_fault_report\n"
      "1:\n"
      "movs r2, #0\n"
      "b cubert_fault_report\n");
}

void cubert_default_handler(void) {
  embedded_write0("unexpected interrupt\n");
  _exit(3);
}

/* ---- vector table ------------------------------------------------------------------- */
typedef void (*vector_t)(void);
#define IRQ_COUNT 32
#define D cubert_default_handler
#define F cubert_fault_handler

typedef struct vector_table_t {
  uint32_t *initial_sp;
  vector_t handlers[15 + IRQ_COUNT];
} vector_table_t;

__attribute__((section(".vectors"), used)) static const vector_table_t g_vectors = {
    __stack_top,
    {
        cubert_reset_handler,
        D,          /* NMI */
        F, F, F, F, /* HardFault, MemManage, BusFault, UsageFault */
        0, 0, 0, 0,
        D, D, 0, D, D, /* SVCall, DebugMonitor, -, PendSV, SysTick */
        D, D, D, D, D, D, D, D, D, D, D, D, D, D, D, D,
        D, D, D, D, D, D, D, D, D, D, D, D, D, D, D, D,
    },
};
