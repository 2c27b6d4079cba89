/* SIMT emulator: runs the megakernel source on the CPU.
 *
 * Blocks: one OS thread each, all started at once and joined at the end of
 * the launch. A grid barrier (atomics + spinning) needs every block resident,
 * as a cooperative launch guarantees on the GPU.
 *
 * Threads of a block: fibers, switched cooperatively on the block's OS thread
 * with a hand-written context switch (ucontext where there is none). A fiber
 * runs until it reaches a barrier, a shuffle or its end; it never yields
 * anywhere else, so code between two barriers runs without interleaving.
 *
 * Schedule: a block sweeps its warps; in each warp it runs the 32 lanes one
 * after another (a "pass"). When all 32 stopped at a warp barrier (__syncwarp
 * or a shuffle) the warp is released and passed again; when they stopped at
 * __syncthreads the sweep moves to the next warp; when every warp stopped
 * there the block is released and a new sweep starts. Sweep and pass orders
 * flip between forward and reverse with every barrier generation and every
 * launch, so a missing barrier shows up as a wrong value instead of hiding
 * behind one lucky order; shared memory starts as 0xA5 garbage for the same
 * reason. A pass that ends with only some lanes at the warp barrier, or a
 * sweep that ends with only some threads at __syncthreads (the rest
 * returned), is misuse: the launch prints it and fails.
 *
 * Checking schedule (MKC_SIMT_SEED=N set at launch; tests use it): each
 * sweep visits the warps, and each pass the lanes, in an order drawn afresh
 * from the seed, and the blocks run one at a time: a block holds the baton
 * until it spins (mkc_pause) or returns, then hands it to another block drawn
 * from the seed. So between two grid barriers each block runs its whole
 * stage alone, in a random order of blocks: a stage that reads what another
 * block writes without a barrier between them reads it stale whenever the
 * reader runs first, instead of only when the OS happens to delay the
 * writer. The same seed gives the same schedule, so a failure repeats. The
 * default schedule pays for none of this.
 *
 * Spins: mkc_pause yields the OS thread, not the fiber. A spinning thread may
 * therefore only wait for other blocks, as the grid barrier's thread 0 does
 * (on the GPU its block mates wait at __syncthreads meanwhile; here they have
 * not been scheduled yet). A spin on a flag set by a thread of the same block
 * never ends. A block whose spin saw no write since its last turn sleeps
 * (a futex on g.writes) until a block writes through the prelude's atomics,
 * which are all a spin waits on: yielding alone, the spinning blocks took a
 * third of the CPU from the working ones where blocks outnumber the cores.
 *
 * Failing: the first failure prints and raises g.aborting. Every fiber that
 * then reaches a barrier, a shuffle, its end or mkc_pause switches to its
 * block's scheduler context and is abandoned (kernel code holds no resources
 * and stacks are rebuilt each launch), so blocks spinning on a grid barrier
 * that will never open unwind too and the launch returns -1. */
#define MKC_SIMT_ABI_ONLY
#include "prelude_cpu.h"
#include "simt.h"

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#ifdef __linux__
#include <limits.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#endif

#if defined(__x86_64__) && !defined(MKC_SIMT_UCONTEXT)
#define SIMT_SWITCH_X86_64 1
#elif defined(__aarch64__) && !defined(MKC_SIMT_UCONTEXT)
#define SIMT_SWITCH_AARCH64 1
#else
#include <ucontext.h> /* about 30x slower: two sigprocmask calls per switch */
#endif

#define WARP 32
#define MAX_THREADS 1024
#define MAX_BLOCKS 1024
#define STACK_BYTES ((size_t)256 << 10)
/* Large enough that a frame with a big local array lands in it instead of
 * jumping over it into the neighbouring fiber's stack; costs no memory. */
#define GUARD_BYTES ((size_t)64 << 10)
#define ALT_STACK_BYTES ((size_t)64 << 10)
#define BLOCK_THREAD_STACK ((size_t)256 << 10)
#define SMEM_GARBAGE 0xA5

/* ---- context switch ---- */

#if defined(SIMT_SWITCH_X86_64) || defined(SIMT_SWITCH_AARCH64)
typedef struct ctx {
  void *sp; /* the callee-saved registers and the resume address are on the stack */
} ctx;

/* Pushes the callee-saved registers of the C ABI, stores the stack pointer in
 * *save_sp, loads load_sp and pops the same frame off it, returning into the
 * other context. Floating-point control registers are not switched: no fiber
 * changes them. */
__attribute__((visibility("hidden"))) void mkc_simt_ctx_swap(void **save_sp, void *load_sp);

static void ctx_swap(ctx *from, ctx *to) { mkc_simt_ctx_swap(&from->sp, to->sp); }
#endif

#ifdef SIMT_SWITCH_X86_64
__asm__(".pushsection .text\n"
        ".globl mkc_simt_ctx_swap\n"
        ".hidden mkc_simt_ctx_swap\n"
        ".type mkc_simt_ctx_swap, @function\n"
        ".p2align 4\n"
        "mkc_simt_ctx_swap:\n"
        "\tpushq %rbp\n"
        "\tpushq %rbx\n"
        "\tpushq %r12\n"
        "\tpushq %r13\n"
        "\tpushq %r14\n"
        "\tpushq %r15\n"
        "\tmovq %rsp, (%rdi)\n"
        "\tmovq %rsi, %rsp\n"
        "\tpopq %r15\n"
        "\tpopq %r14\n"
        "\tpopq %r13\n"
        "\tpopq %r12\n"
        "\tpopq %rbx\n"
        "\tpopq %rbp\n"
        "\tret\n"
        ".size mkc_simt_ctx_swap, .-mkc_simt_ctx_swap\n"
        ".popsection\n");

/* A frame that mkc_simt_ctx_swap pops into fn: six zero registers, then fn as
 * the return address, then a zero return address for fn (which never
 * returns). fn is entered with rsp = 8 mod 16, as after a call. */
static void ctx_make(ctx *c, char *stack, size_t size, void (*fn)(void)) {
  uintptr_t *sp = (uintptr_t *)(stack + size);
  *--sp = 0;
  *--sp = (uintptr_t)fn;
  for (int i = 0; i < 6; i++) *--sp = 0;
  c->sp = sp;
}
#endif

#ifdef SIMT_SWITCH_AARCH64
/* Frame: x19..x28, x29 (fp), x30 (lr, where ret goes), d8..d15: 160 bytes. */
__asm__(".pushsection .text\n"
        ".globl mkc_simt_ctx_swap\n"
        ".hidden mkc_simt_ctx_swap\n"
        ".type mkc_simt_ctx_swap, %function\n"
        ".p2align 4\n"
        "mkc_simt_ctx_swap:\n"
        "\tsub sp, sp, #160\n"
        "\tstp x19, x20, [sp, #0]\n"
        "\tstp x21, x22, [sp, #16]\n"
        "\tstp x23, x24, [sp, #32]\n"
        "\tstp x25, x26, [sp, #48]\n"
        "\tstp x27, x28, [sp, #64]\n"
        "\tstp x29, x30, [sp, #80]\n"
        "\tstp d8, d9, [sp, #96]\n"
        "\tstp d10, d11, [sp, #112]\n"
        "\tstp d12, d13, [sp, #128]\n"
        "\tstp d14, d15, [sp, #144]\n"
        "\tmov x2, sp\n"
        "\tstr x2, [x0]\n"
        "\tmov sp, x1\n"
        "\tldp x19, x20, [sp, #0]\n"
        "\tldp x21, x22, [sp, #16]\n"
        "\tldp x23, x24, [sp, #32]\n"
        "\tldp x25, x26, [sp, #48]\n"
        "\tldp x27, x28, [sp, #64]\n"
        "\tldp x29, x30, [sp, #80]\n"
        "\tldp d8, d9, [sp, #96]\n"
        "\tldp d10, d11, [sp, #112]\n"
        "\tldp d12, d13, [sp, #128]\n"
        "\tldp d14, d15, [sp, #144]\n"
        "\tadd sp, sp, #160\n"
        "\tret\n"
        ".size mkc_simt_ctx_swap, .-mkc_simt_ctx_swap\n"
        ".popsection\n");

/* A zeroed frame with fn as x30: ret enters fn with sp at the (16-byte
 * aligned) top and fp = 0, which ends backtraces. fn never returns. */
static void ctx_make(ctx *c, char *stack, size_t size, void (*fn)(void)) {
  uintptr_t *sp = (uintptr_t *)(stack + size) - 20;
  memset(sp, 0, 20 * sizeof *sp);
  sp[11] = (uintptr_t)fn;
  c->sp = sp;
}
#endif

#if !defined(SIMT_SWITCH_X86_64) && !defined(SIMT_SWITCH_AARCH64)
typedef struct ctx {
  ucontext_t uc;
} ctx;

static void ctx_swap(ctx *from, ctx *to) { swapcontext(&from->uc, &to->uc); }

static void ctx_make(ctx *c, char *stack, size_t size, void (*fn)(void)) {
  getcontext(&c->uc);
  c->uc.uc_stack.ss_sp = stack;
  c->uc.uc_stack.ss_size = size;
  c->uc.uc_link = NULL;
  makecontext(&c->uc, fn, 0);
}
#endif

/* ---- state ---- */

enum wait_kind { WAIT_WARP, WAIT_BLOCK, WAIT_DONE };

typedef struct block block;

struct mkc_simt_fiber {
  ctx ctx;
  block *block;
  int tid;
  char *stack; /* lowest byte of the usable stack; the guard is below it */
};

/* Values one warp sum carries per meeting; more are summed in several. */
#define SUM_MAX 64
/* Warp sums of lane functions (mkc_simt_warp_sum_of) a warp keeps between two
 * of its barriers, the values each holds, and the values a lane function may
 * write. Past any of these a sum is a meeting again. */
#define COLL_CAP 64
#define COLL_VALS 256
#define COLL_LANE_MAX 1024
/* The largest mma meeting (mkc_simt_mma_tf32): per lane 2 x MT x 4 words of
 * A, 2 x NT x 2 of B and MT x NT x 4 accumulators. */
#define MMA_MT_MAX 4
#define MMA_NT_MAX 8
/* Queued products (mkc_simt_mma_tf32_queue) a lane may hold before its flush;
 * each takes A and B words, the flush one set of accumulators. */
#define MMA_STEPS_MAX 16 /* a head of 128: 16 steps of k = 8 */
#define MMA_AB_WORDS (8 * MMA_MT_MAX + 4 * MMA_NT_MAX)
#define MMA_C_AT (MMA_STEPS_MAX * MMA_AB_WORDS)
#define MMA_WORDS (MMA_C_AT + 4 * MMA_MT_MAX * MMA_NT_MAX)

typedef struct warp {
  /* Shuffle slots, double-buffered by barrier parity (see mkc_simt_shfl_xor). */
  unsigned slots[2][WARP];
  /* Warp sums, double-buffered alike: each lane's values, the sums, and the
   * barrier generation whose sums are in sum_out (computed once, by the
   * first lane to run after the barrier). */
  float sum_in[2][SUM_MAX][WARP];
  float sum_out[2][SUM_MAX];
  int sum_gen[2];
  /* mma meetings, double-buffered alike: each lane's queued fragments and
   * its accumulators in, the accumulators out (computed once, by the first
   * lane to run after the barrier), each lane's (nb, mt, nt, MT, NT, na, steps),
   * which must agree, and the products each lane has queued so far. */
  unsigned mma_in[2][MMA_WORDS][WARP];
  float mma_out[2][4 * MMA_MT_MAX * MMA_NT_MAX][WARP];
  int mma_shape[2][WARP][7];
  int mma_gen[2];
  int mma_queued[2][WARP];
  int gen;       /* warp barriers passed this launch */
  int n_at_warp; /* lanes of the current pass stopped at the warp barrier */
  /* Sums of lane functions since the warp's last barrier (mkc_simt_warp_sum_of):
   * computed by the first lane to ask, read by the others; coll_next[l] is
   * the next one lane l asks for. */
  float coll_sums[COLL_CAP * COLL_VALS]; /* packed, sum i's from coll_at[i]: few lines */
  int coll_at[COLL_CAP + 1];
  int coll_n;
  int coll_next[WARP];
} warp;

struct block {
  int bid, nthreads, nwarps;
  unsigned long long rng;         /* checking schedule: this block's draws */
  unsigned char warp_order[WARP]; /* checking schedule: this sweep's warps */
  struct mkc_simt_fiber *fibers;  /* [nthreads] */
  warp *warps;                    /* [nwarps] */
  int fiber_cap;                  /* fibers, warps and stacks exist for this many threads */
  char *stacks;                   /* fiber_cap x (guard + stack), mapped once */
  char *smem;
  size_t smem_cap;
  float coll_lanes[WARP * COLL_LANE_MAX]; /* a lane function's values, every lane's */
  char *alt_stack;                        /* signal stack: reports a fiber stack overflow */
  pthread_t thread;
  ctx main; /* the OS thread's own context: the launch ends by switching to it */
  /* schedule */
  int n_at_block, n_done; /* threads stopped at __syncthreads / returned */
  int bgen;               /* block barriers passed this launch */
  int reverse;            /* this sweep walks warps last to first */
  int sweep_pos;          /* position of the current warp in the sweep */
  int cur_warp;
  int lane_pos;  /* lanes of the current pass started so far */
  int lane_mask; /* the i-th lane of the pass is i ^ lane_mask: 0 forward, 31 reverse */
  /* the baton (checking schedule), under g.baton_lock */
  pthread_cond_t baton_given;
  int running;           /* not yet returned */
  int stuck;             /* it spun again without passing a barrier since its last turn */
  long barriers_at_turn; /* barriers passed when it last gave the baton away */
};

__thread mkc_simt_self mkc_simt_cur;

static struct {
  pthread_mutex_t lock; /* one launch at a time */
  block **blocks;       /* kept across launches: stacks and smem are reused */
  int n_blocks_alloc;
  unsigned launch_no;
  int aborting; /* atomic: a failure was reported; every fiber unwinds */
  int segv_installed;
  struct sigaction old_segv;
  /* the launch */
  int nblocks;
  size_t smem_bytes;
  mkc_simt_entry entry;
  void *arg;
  /* the checking schedule (MKC_SIMT_SEED): one block runs at a time, the holder of the baton */
  int checking;
  unsigned long long seed;
  pthread_mutex_t baton_lock;
  int holder; /* the block that may run; -1: none */
  unsigned long long baton_rng;
  int stuck_turns; /* turns in a row that ended stuck with every other block stuck too */
  /* the default schedule's spins: writes other blocks may wait for, and the blocks asleep */
  unsigned writes, sleepers;
} g = {.lock = PTHREAD_MUTEX_INITIALIZER, .baton_lock = PTHREAD_MUTEX_INITIALIZER};

static void fail(const char *fmt, ...) {
  if (__atomic_exchange_n(&g.aborting, 1, __ATOMIC_SEQ_CST)) return; /* report the first only */
  va_list ap;
  va_start(ap, fmt);
  fputs("mkc: error: simt: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  if (g.checking) { /* blocks waiting for the baton unwind too */
    pthread_mutex_lock(&g.baton_lock);
    for (int i = 0; i < g.nblocks && i < g.n_blocks_alloc; i++)
      pthread_cond_signal(&g.blocks[i]->baton_given);
    pthread_mutex_unlock(&g.baton_lock);
  }
  mkc_simt_wrote(); /* and the blocks asleep in a spin */
}

static int aborting(void) { return __atomic_load_n(&g.aborting, __ATOMIC_RELAXED); }

/* ---- spins on the default schedule ---- */

void mkc_simt_wrote(void) {
  __atomic_fetch_add(&g.writes, 1, __ATOMIC_SEQ_CST);
#ifdef __linux__
  if (__atomic_load_n(&g.sleepers, __ATOMIC_SEQ_CST))
    syscall(SYS_futex, &g.writes, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
#endif
}

/* One turn of a spin: a yield while writes come, else sleep until the next.
 * Sleeping is safe only when nothing was written since this OS thread's last
 * turn, which came before its caller looked at the flag again: then the flag
 * is as the caller saw it, and a write after `now` makes the futex return at
 * once. (Fibers switch only at barriers, so the last turn was the same spin's,
 * or an earlier spin's that ended before this one looked.) The timeout bounds
 * a wait on a write that went around the atomics, were there one. */
static void spin_turn(void) {
  static __thread unsigned seen;
  unsigned now = __atomic_load_n(&g.writes, __ATOMIC_SEQ_CST);
#ifdef __linux__
  if (now == seen) {
    __atomic_fetch_add(&g.sleepers, 1, __ATOMIC_SEQ_CST);
    struct timespec limit = {0, 2000000};
    syscall(SYS_futex, &g.writes, FUTEX_WAIT_PRIVATE, now, &limit, NULL, 0);
    __atomic_fetch_sub(&g.sleepers, 1, __ATOMIC_SEQ_CST);
    return;
  }
#endif
  seen = now;
  sched_yield();
}

/* ---- schedule ---- */

/* splitmix64: the checking schedule's draws. */
static unsigned long long next_random(unsigned long long *state) {
  unsigned long long z = (*state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* order[0..n) := a random permutation of 0..n-1 (Fisher-Yates). */
static void shuffle_order(unsigned char *order, int n, unsigned long long *rng) {
  for (int i = 0; i < n; i++) order[i] = (unsigned char)i;
  for (int i = n - 1; i > 0; i--) {
    int j = (int)(next_random(rng) % (unsigned long long)(i + 1));
    unsigned char t = order[i];
    order[i] = order[j];
    order[j] = t;
  }
}

/* A pass's lane order is i ^ mask: forward or reverse, or in the checking
 * schedule any of 32 such orders, which puts each pair of lanes either way
 * round with even odds, as a random permutation does. */
static void start_pass(block *b, int w) {
  b->cur_warp = w;
  b->lane_pos = 0;
  if (g.checking)
    b->lane_mask = (int)(next_random(&b->rng) & (WARP - 1));
  else
    b->lane_mask = (b->reverse + b->warps[w].gen) & 1 ? WARP - 1 : 0;
}

static void start_sweep(block *b) {
  b->reverse = (int)((g.launch_no + (unsigned)b->bgen) & 1u);
  b->sweep_pos = 0;
  if (g.checking) {
    shuffle_order(b->warp_order, b->nwarps, &b->rng);
    start_pass(b, b->warp_order[0]);
  } else {
    start_pass(b, b->reverse ? b->nwarps - 1 : 0);
  }
}

/* The warp i-th in this sweep. */
static int warp_at(const block *b, int i) {
  if (g.checking) return b->warp_order[i];
  return b->reverse ? b->nwarps - 1 - i : i;
}

/* A barrier released the warp: every lane has taken every sum it asked for. */
static void coll_reset(warp *w) {
  w->coll_n = 0;
  w->coll_at[0] = 0;
  memset(w->coll_next, 0, sizeof w->coll_next);
}

/* The fiber to run next, or NULL when the block is finished or failed (then
 * the caller switches to b->main). Called after the running fiber stopped and
 * was counted. */
static struct mkc_simt_fiber *pick_next(block *b) {
  for (;;) {
    if (b->lane_pos < WARP) {
      int i = b->lane_pos++;
      return &b->fibers[b->cur_warp * WARP + (i ^ b->lane_mask)];
    }
    warp *w = &b->warps[b->cur_warp];
    if (w->n_at_warp > 0) {
      if (w->n_at_warp < WARP) {
        fail("block %d warp %d: __syncwarp or shuffle reached by %d of %d lanes (the rest are at "
             "__syncthreads or returned)",
             b->bid, b->cur_warp, w->n_at_warp, WARP);
        return NULL;
      }
      w->n_at_warp = 0;
      w->gen++;
      coll_reset(w);
      start_pass(b, b->cur_warp);
      continue;
    }
    if (++b->sweep_pos < b->nwarps) {
      start_pass(b, warp_at(b, b->sweep_pos));
      continue;
    }
    if (b->n_done == b->nthreads) return NULL;
    if (b->n_done > 0) {
      fail("block %d: __syncthreads reached by %d of %d threads (the rest returned)", b->bid,
           b->n_at_block, b->nthreads);
      return NULL;
    }
    b->n_at_block = 0;
    b->bgen++;
    for (int i = 0; i < b->nwarps; i++) coll_reset(&b->warps[i]);
    start_sweep(b);
  }
}

static struct mkc_simt_fiber *self(void) {
  struct mkc_simt_fiber *f = mkc_simt_cur.fiber;
  if (!f) {
    fputs("mkc: error: simt: barrier, shuffle or pause called outside a launch\n", stderr);
    abort();
  }
  return f;
}

/* Leaves the launch: the block's scheduler context takes over and this fiber
 * is never resumed. */
static void abandon(struct mkc_simt_fiber *f) {
  ctx_swap(&f->ctx, &f->block->main);
  abort();
}

/* Stops the running fiber at a barrier (or its end) and runs the next one;
 * returns when the barrier has released this fiber. */
static void wait_at(struct mkc_simt_fiber *f, enum wait_kind kind) {
  block *b = f->block;
  if (kind == WAIT_WARP)
    b->warps[f->tid / WARP].n_at_warp++;
  else if (kind == WAIT_BLOCK)
    b->n_at_block++;
  else
    b->n_done++;
  struct mkc_simt_fiber *next = aborting() ? NULL : pick_next(b);
  if (next == f) return; /* last lane to arrive and first of the next pass */
  if (!next) abandon(f);
  mkc_simt_cur.tid = next->tid;
  mkc_simt_cur.fiber = next;
  ctx_swap(&f->ctx, &next->ctx);
}

static void fiber_start(void) {
  struct mkc_simt_fiber *f = mkc_simt_cur.fiber;
  if (!aborting()) g.entry(g.arg);
  wait_at(f, WAIT_DONE);
  abort(); /* a finished fiber is never resumed */
}

/* ---- the baton (checking schedule) ---- */

/* Waits until block b holds the baton, or the launch fails. */
static void baton_wait(block *b) {
  pthread_mutex_lock(&g.baton_lock);
  while (g.holder != b->bid && !aborting()) pthread_cond_wait(&b->baton_given, &g.baton_lock);
  pthread_mutex_unlock(&g.baton_lock);
}

/* Barriers block b has passed this launch: its fibers switch only at
 * barriers, so a spinning thread whose count has not moved since its last
 * turn has done nothing but spin (and its block mates nothing at all). */
static long barriers_passed(const block *b) {
  long n = b->bgen + b->n_done;
  for (int w = 0; w < b->nwarps; w++) n += b->warps[w].gen;
  return n;
}

/* Block b gives the baton away (`returned`: b has finished) to a running
 * block drawn from the seed: one that may move, where there is one. A block
 * that spins again without passing a barrier since its last turn is stuck:
 * it waits for another block; whatever a block that moved did may free any
 * of them. Only a preference: when every block is stuck one of them is drawn.
 * A spin only reads (it waits for other blocks), so once every block has had
 * a turn stuck while all the others were stuck too, nothing can ever move:
 * the launch fails as a deadlock (on the GPU the wait would never end). */
static void baton_pass(block *b, int returned) {
  pthread_mutex_lock(&g.baton_lock);
  if (returned) b->running = 0;
  long barriers = barriers_passed(b);
  if (returned || barriers != b->barriers_at_turn)
    for (int i = 0; i < g.nblocks; i++) g.blocks[i]->stuck = 0;
  else
    b->stuck = 1;
  b->barriers_at_turn = barriers;
  int n_free = 0, n_stuck = 0;
  for (int i = 0; i < g.nblocks; i++) {
    const block *o = g.blocks[i];
    if (o == b || !o->running) continue;
    n_free += !o->stuck;
    n_stuck += o->stuck;
  }
  g.holder = b->running ? b->bid : -1;
  g.stuck_turns = b->stuck && n_free == 0 ? g.stuck_turns + 1 : 0;
  int deadlock = g.stuck_turns > 2 * g.nblocks + 2;
  if (n_free + n_stuck > 0) {
    int want_stuck = n_free == 0;
    int k = (int)(next_random(&g.baton_rng) % (unsigned long long)(n_free ? n_free : n_stuck));
    for (int i = 0; i < g.nblocks; i++) {
      const block *o = g.blocks[i];
      if (o != b && o->running && o->stuck == want_stuck && k-- == 0) {
        g.holder = i;
        break;
      }
    }
  }
  if (g.holder >= 0 && g.holder != b->bid) pthread_cond_signal(&g.blocks[g.holder]->baton_given);
  pthread_mutex_unlock(&g.baton_lock);
  if (deadlock)
    fail("deadlock: every block spins and none can move (a wait for an arrival that never comes)");
}

/* ---- the kernel-facing ABI (prelude_cpu.h) ---- */

void mkc_simt_sync_block(void) {
  struct mkc_simt_fiber *f = self();
  wait_at(f, WAIT_BLOCK);
}

void mkc_simt_sync_warp(void) {
  struct mkc_simt_fiber *f = self();
  wait_at(f, WAIT_WARP);
}

/* Each lane deposits its value, the warp meets at a barrier, each lane reads
 * its partner's slot. Two slot buffers, picked by barrier parity, make one
 * barrier enough: a lane released early may run on to the next shuffle before
 * its partner has read this one, but it writes the other buffer; it cannot
 * come back to this buffer before the barrier after that, which its partner
 * reaches only after reading. */
unsigned mkc_simt_shfl_xor(unsigned v, int mask) {
  struct mkc_simt_fiber *f = self();
  warp *w = &f->block->warps[f->tid / WARP];
  int lane = f->tid % WARP;
  unsigned *slots = w->slots[w->gen & 1];
  slots[lane] = v;
  wait_at(f, WAIT_WARP);
  int src = lane ^ mask;
  return src >= 0 && src < WARP ? slots[src] : v; /* out of the warp: own value, as shfl.bfly */
}

/* The warp meets once per SUM_MAX values instead of once per shuffle; each
 * value's sum is mkc_lanes_sum's (prelude_cpu.h), the butterfly's bits. */
void mkc_simt_warp_sum(float *v, int rows, int stride, int n) {
  struct mkc_simt_fiber *f = self();
  warp *w = &f->block->warps[f->tid / WARP];
  int lane = f->tid % WARP;
  if (n > SUM_MAX) { /* rows longer than a meeting: one part of a row at a time */
    for (int r = 0; r < rows; r++)
      for (int i = 0; i < n; i += SUM_MAX)
        mkc_simt_warp_sum(v + r * stride + i, 1, 0, n - i < SUM_MAX ? n - i : SUM_MAX);
    return;
  }
  int per_meeting = n > 0 ? SUM_MAX / n : 1; /* whole rows */
  for (int r0 = 0; r0 < rows; r0 += per_meeting) {
    int r1 = r0 + per_meeting < rows ? r0 + per_meeting : rows, par = w->gen & 1, gen = w->gen;
    float(*in)[WARP] = w->sum_in[par];
    for (int r = r0, k = 0; r < r1; r++)
      for (int i = 0; i < n; i++) in[k++][lane] = v[r * stride + i];
    wait_at(f, WAIT_WARP);
    int count = (r1 - r0) * n;
    if (w->sum_gen[par] != gen + 1) { /* the first lane released computes the sums */
      for (int k = 0; k < count; k++) w->sum_out[par][k] = mkc_lanes_sum(in[k]);
      w->sum_gen[par] = gen + 1;
    }
    for (int r = r0, k = 0; r < r1; r++)
      for (int i = 0; i < n; i++) v[r * stride + i] = w->sum_out[par][k++];
  }
}

/* The shuffles' butterfly over groups of width lanes (masks width / 2 .. 1),
 * bit for bit, in one meeting per SUM_MAX values: every lane deposits its
 * values, the first released replaces them with the group sums, each lane
 * takes its own. */
void mkc_simt_warp_sum_width(float *v, int n, int width) {
  if (width <= 1) return; /* no shuffle: no meeting */
  struct mkc_simt_fiber *f = self();
  warp *w = &f->block->warps[f->tid / WARP];
  int lane = f->tid % WARP;
  for (int i0 = 0; i0 < n; i0 += SUM_MAX) {
    int count = n - i0 < SUM_MAX ? n - i0 : SUM_MAX, par = w->gen & 1, gen = w->gen;
    float(*in)[WARP] = w->sum_in[par];
    for (int k = 0; k < count; k++) in[k][lane] = v[i0 + k];
    wait_at(f, WAIT_WARP);
    if (w->sum_gen[par] != gen + 1) {
      for (int k = 0; k < count; k++)
        for (int m = width >> 1; m > 0; m >>= 1) {
          float a[WARP];
          for (int l = 0; l < WARP; l++) a[l] = in[k][l] + in[k][l ^ m];
          memcpy(in[k], a, sizeof a);
        }
      w->sum_gen[par] = gen + 1;
    }
    for (int k = 0; k < count; k++) v[i0 + k] = in[k][lane];
  }
}

/* mkc_lanes_sum of values k < count of 32 lanes (lane l's at v[l * span + k])
 * into sum[k], 8 values a vector: each element goes through the same
 * additions in the same order, so the bits are mkc_lanes_sum's. */
typedef float v8s __attribute__((vector_size(32)));

static void butterfly_sums(const float *v, int span, int count, float *sum) {
  for (int k0 = 0; k0 < count; k0 += 8) {
    v8s a[WARP];
    int m = count - k0 < 8 ? count - k0 : 8;
    for (int l = 0; l < WARP; l++) {
      a[l] = (v8s){0};
      memcpy(&a[l], v + l * span + k0, (size_t)m * sizeof(float));
    }
    for (int h = WARP / 2; h >= 4; h >>= 1) /* masks 16, 8, 4 */
      for (int l = 0; l < h; l++) a[l] += a[l + h];
    v8s x = (a[0] + a[2]) + (a[1] + a[3]); /* masks 2 and 1 */
    memcpy(sum + k0, &x, (size_t)m * sizeof(float));
  }
}

/* fn(args, l, v) for every lane l, then the butterfly over the lanes of
 * v[r * stride + i] (r < rows, i < n), into v: what a warp gets from each
 * lane running fn and then mkc_warp_sum_rows, as the checking schedule still
 * runs it. Otherwise the first lane to ask runs fn for all 32 lanes, in a
 * loop, then the butterfly (or warp_fn once, which gives the sums), and
 * keeps the sums; the others read them, with no meeting and no switch. Lanes
 * meet only at the warp's barriers, or every COLL_CAP sums. fn must depend
 * only on args, the lane it is given and memory no lane of the warp writes
 * meanwhile (on the GPU the lanes run it in lockstep). */
/* A warp's sums (row r's n at sums + r * n) into a lane's v (row r's at v + r
 * * stride): vectors for rows of all their inputs (no call to memcpy), and one
 * input's (a T = 1 step of a kernel of several) as its own loop. */
static void copy_sums(const float *sums, float *v, int rows, int stride, int n) {
  if (n == stride) {
    int k = 0, m = rows * n;
    for (; k + 8 <= m; k += 8) {
      v8s x;
      memcpy(&x, sums + k, sizeof x);
      memcpy(v + k, &x, sizeof x);
    }
    for (; k < m; k++) v[k] = sums[k];
  } else if (n == 1)
    for (int r = 0; r < rows; r++) v[r * stride] = sums[r];
  else
    for (int r = 0, k = 0; r < rows; r++)
      for (int i = 0; i < n; i++) v[r * stride + i] = sums[k++];
}

/* Whether warp sums of this shape go lane by lane, with a meeting: on the
 * checking schedule, or past the room for a warp's sums (rows * n values) or a
 * lane's values (rows * stride) in the collected sums. */
static int coll_lane_by_lane(int rows, int stride, int n) {
  return g.checking || rows * n > COLL_VALS || rows * stride > COLL_LANE_MAX;
}

void mkc_simt_warp_sum_of(mkc_simt_lane_fn fn, mkc_simt_warp_fn warp_fn, const void *args, float *v,
                          int rows, int stride, int n) {
  struct mkc_simt_fiber *f = self();
  block *b = f->block;
  warp *w = &b->warps[f->tid / WARP];
  int lane = f->tid % WARP;
  int span = rows * stride; /* the values fn writes, lane after lane in coll_lanes */
  if (coll_lane_by_lane(rows, stride, n)) {
    fn(args, lane, v);
    mkc_simt_warp_sum(v, rows, stride, n);
    return;
  }
  if (w->coll_next[lane] == COLL_CAP) mkc_simt_sync_warp(); /* every lane, at the same call */
  int at = w->coll_next[lane]++;
  float *sums = w->coll_sums + w->coll_at[at];
  if (at == w->coll_n) { /* the first lane here */
    w->coll_at[at + 1] = w->coll_at[at] + rows * n;
    if (warp_fn)
      warp_fn(args, sums);
    else {
      for (int l = 0; l < WARP; l++) fn(args, l, b->coll_lanes + l * span);
      if (n == stride) /* the rows' values lie together: all rows at once */
        butterfly_sums(b->coll_lanes, span, rows * n, sums);
      else
        for (int r = 0; r < rows; r++)
          butterfly_sums(b->coll_lanes + r * stride, span, n, sums + r * n);
    }
    w->coll_n++;
  }
  copy_sums(sums, v, rows, stride, n);
}

int mkc_simt_warp_sum_ready(float *v, int rows, int stride, int n) {
  struct mkc_simt_fiber *f = self();
  warp *w = &f->block->warps[f->tid / WARP];
  int lane = f->tid % WARP;
  if (coll_lane_by_lane(rows, stride, n)) return 0;
  int at = w->coll_next[lane];
  if (at >= w->coll_n) return 0; /* the first lane here: it makes them */
  w->coll_next[lane]++;
  if (v) copy_sums(w->coll_sums + w->coll_at[at], v, rows, stride, n);
  return 1;
}

/* One mma.sync.m16n8k8 tf32 tile, D = A B + C, with the operands gathered
 * from the lanes' fragments in the PTX ISA's layout (groupID g = lane >> 2,
 * threadID_in_group q = lane & 3): A (16 x 8): a0 (g, q), a1 (g + 8, q),
 * a2 (g, q + 4), a3 (g + 8, q + 4); B (8 x 8, k x n): b0 (q, g),
 * b1 (q + 4, g); C and D (16 x 8): c0 (g, 2q), c1 (g, 2q + 1), c2 (g + 8, 2q),
 * c3 (g + 8, 2q + 1). A tf32 operand is the top 19 bits of its register, as
 * the tensor core reads it; products of two tf32 values are exact in float,
 * and are added to the accumulator in k order. */
#pragma GCC diagnostic ignored "-Wpsabi" /* static functions: no ABI crosses a boundary */
typedef float v8f __attribute__((vector_size(32)));
typedef unsigned v8u __attribute__((vector_size(32)));
typedef int v8i __attribute__((vector_size(32)));
/* Lanes of a and b (8 each) picked by 8 constant indices: clang's and GCC
 * 12's builtin, GCC's older one otherwise (clang builds the fuzz targets). */
#if defined(__clang__) || __GNUC__ >= 12
#define SHUFFLE8(a, b, ...) __builtin_shufflevector(a, b, __VA_ARGS__)
#else
#define SHUFFLE8(a, b, ...) __builtin_shuffle(a, b, (v8i){__VA_ARGS__})
#endif

/* Lanes 8h .. 8h + 7 of register row r, as floats (tf32: the top 19 bits). */
static inline v8f lanes8(const unsigned *row, int h, int tf32) {
  v8u u;
  memcpy(&u, row + 8 * h, sizeof u);
  if (tf32) u &= 0xffffe000u;
  v8f f;
  memcpy(&f, &u, sizeof f);
  return f;
}

/* A's rows 2h and 2h + 1 are a0 | a2 of lanes 8h .. 8h + 3 and 8h + 4 ..
 * 8h + 7; rows 2h + 8 and 2h + 9 the same of a1 | a3. */
static inline void gather_a(unsigned (*in)[WARP], v8f A[16]) {
  for (int h = 0; h < 4; h++) {
    v8f a0 = lanes8(in[0], h, 1), a1 = lanes8(in[1], h, 1);
    v8f a2 = lanes8(in[2], h, 1), a3 = lanes8(in[3], h, 1);
    A[2 * h] = SHUFFLE8(a0, a2, 0, 1, 2, 3, 8, 9, 10, 11);
    A[2 * h + 1] = SHUFFLE8(a0, a2, 4, 5, 6, 7, 12, 13, 14, 15);
    A[2 * h + 8] = SHUFFLE8(a1, a3, 0, 1, 2, 3, 8, 9, 10, 11);
    A[2 * h + 9] = SHUFFLE8(a1, a3, 4, 5, 6, 7, 12, 13, 14, 15);
  }
}

static inline void gather_b(unsigned (*in)[WARP], v8f B[8]) {
  /* B's row q + 4r is register r of lanes q, q + 4, ..., q + 28 (column g in lane 4g + q) */
  for (int r = 0; r < 2; r++) {
    v8u L[4];
    memcpy(L, in[r], sizeof L);
    for (int i = 0; i < 4; i++) L[i] &= 0xffffe000u;
    /* columns 0..3 (from lanes 0..15) and 4..7 (lanes 16..31) for q = 0, 1 and q = 2, 3 */
    v8u lo01 = SHUFFLE8(L[0], L[1], 0, 4, 8, 12, 1, 5, 9, 13);
    v8u hi01 = SHUFFLE8(L[2], L[3], 0, 4, 8, 12, 1, 5, 9, 13);
    v8u lo23 = SHUFFLE8(L[0], L[1], 2, 6, 10, 14, 3, 7, 11, 15);
    v8u hi23 = SHUFFLE8(L[2], L[3], 2, 6, 10, 14, 3, 7, 11, 15);
    v8u row[4] = {SHUFFLE8(lo01, hi01, 0, 1, 2, 3, 8, 9, 10, 11),
                  SHUFFLE8(lo01, hi01, 4, 5, 6, 7, 12, 13, 14, 15),
                  SHUFFLE8(lo23, hi23, 0, 1, 2, 3, 8, 9, 10, 11),
                  SHUFFLE8(lo23, hi23, 4, 5, 6, 7, 12, 13, 14, 15)};
    memcpy(&B[4 * r], row, sizeof row);
  }
}

/* D's rows 2h and 2h + 1 interleave c0 and c1 of lanes 8h .. 8h + 7 (rows
 * + 8: c2 and c3); and back. */
static inline void gather_c(unsigned (*in)[WARP], v8f D[16]) {
  for (int h = 0; h < 4; h++)
    for (int hi = 0; hi < 2; hi++) {
      v8f x0 = lanes8(in[2 * hi], h, 0), x1 = lanes8(in[2 * hi + 1], h, 0);
      D[8 * hi + 2 * h] = SHUFFLE8(x0, x1, 0, 8, 1, 9, 2, 10, 3, 11);
      D[8 * hi + 2 * h + 1] = SHUFFLE8(x0, x1, 4, 12, 5, 13, 6, 14, 7, 15);
    }
}

static inline void scatter_d(const v8f D[16], float (*out)[WARP]) {
  for (int h = 0; h < 4; h++)
    for (int hi = 0; hi < 2; hi++) {
      v8f d0 = D[8 * hi + 2 * h], d1 = D[8 * hi + 2 * h + 1];
      v8f c0 = SHUFFLE8(d0, d1, 0, 2, 4, 6, 8, 10, 12, 14);
      v8f c1 = SHUFFLE8(d0, d1, 1, 3, 5, 7, 9, 11, 13, 15);
      memcpy(out[2 * hi] + 8 * h, &c0, sizeof c0);
      memcpy(out[2 * hi + 1] + 8 * h, &c1, sizeof c1);
    }
}

/* D's 8 columns one vector per row, each row's products in the kernel's
 * order; the rows' sums are independent, so 8 advance together (in
 * registers) instead of one long chain of additions at a time. */
static inline void mma_tile(v8f D[16], v8f A[2][MMA_MT_MAX][16], v8f B[2][MMA_NT_MAX][8], int i,
                            int j, int na, int nb) {
  for (int half = 0; half < 16; half += 8) { /* 8 rows: their sums fit in registers */
    v8f d[8];
#pragma GCC unroll 8
    for (int row = 0; row < 8; row++) d[row] = D[half + row];
    for (int p = 0; p < 3; p++) { /* (a0, b0), (a1, b0), (a0, b1): the CUDA prelude's order */
      int pa = p == 1, pb = p == 2;
      if (pa >= na) continue;
      if (pb >= nb) break;
      for (int k = 0; k < 8; k++) {
        v8f b = B[pb][j][k];
#pragma GCC unroll 8
        for (int row = 0; row < 8; row++) d[row] += A[pa][i][half + row][k] * b;
      }
    }
#pragma GCC unroll 8
    for (int row = 0; row < 8; row++) D[half + row] = d[row];
  }
}

/* The meeting's tiles. Built for AVX2 too, picked at run time where the
 * compiler can (the host binary is built for the baseline ISA, whose 16-byte
 * vectors make the shuffles above element by element): this is the
 * emulator's hottest code when a prompt chunk runs. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx2", "default")))
#endif
static void
mma_compute(warp *w, int par, int steps, int na, int nb, int mt, int nt, int MT, int NT) {
  unsigned(*in)[WARP] = w->mma_in[par];
  v8f A[2][MMA_MT_MAX][16], B[2][MMA_NT_MAX][8], D[MMA_MT_MAX * MMA_NT_MAX][16];
  for (int i = 0; i < mt; i++)
    for (int j = 0; j < nt; j++) gather_c(in + MMA_C_AT + (i * NT + j) * 4, D[i * NT + j]);
  for (int s = 0; s < steps; s++) { /* the products in the order the lanes queued them */
    unsigned(*step)[WARP] = in + s * MMA_AB_WORDS;
    for (int p = 0; p < na; p++)
      for (int i = 0; i < mt; i++) gather_a(step + (p * MT + i) * 4, A[p][i]);
    for (int p = 0; p < nb; p++)
      for (int j = 0; j < nt; j++) gather_b(step + 8 * MT + (p * NT + j) * 2, B[p][j]);
    for (int i = 0; i < mt; i++)
      for (int j = 0; j < nt; j++) mma_tile(D[i * NT + j], A, B, i, j, na, nb);
  }
  for (int i = 0; i < mt; i++)
    for (int j = 0; j < nt; j++) scatter_d(D[i * NT + j], w->mma_out[par] + (i * NT + j) * 4);
}

/* A product queued by this lane: its A and B fragments stored (na, nb: their
 * parts), nothing computed until the flush. The shape must be the same at
 * every step. */
static void mma_queue(const unsigned *a, const unsigned *b, int na, int nb, int mt, int nt, int MT,
                      int NT) {
  struct mkc_simt_fiber *f = self();
  warp *w = &f->block->warps[f->tid / WARP];
  int lane = f->tid % WARP, par = w->gen & 1, *queued = &w->mma_queued[par][lane];
  const int shape[6] = {nb, mt, nt, MT, NT, na};
  if (MT < 1 || MT > MMA_MT_MAX || NT < 1 || NT > MMA_NT_MAX || mt < 0 || mt > MT || nt < 0 ||
      nt > NT || nb < 1 || nb > 2) {
    fail("block %d thread %d: mma: tiles %d x %d of %d x %d, %d B parts: outside what the "
         "emulator takes (%d x %d, 1 or 2)",
         f->block->bid, f->tid, mt, nt, MT, NT, nb, MMA_MT_MAX, MMA_NT_MAX);
    abandon(f);
  }
  if (*queued == MMA_STEPS_MAX) {
    fail("block %d thread %d: mma: more than %d products queued before a flush", f->block->bid,
         f->tid, MMA_STEPS_MAX);
    abandon(f);
  }
  if (*queued > 0 && memcmp(w->mma_shape[par][lane], shape, sizeof shape) != 0) {
    fail("block %d thread %d: mma: products of another shape in one queue", f->block->bid, f->tid);
    abandon(f);
  }
  memcpy(w->mma_shape[par][lane], shape, sizeof shape);
  unsigned(*in)[WARP] = w->mma_in[par] + *queued * MMA_AB_WORDS;
  for (int k = 0; k < 4 * na * MT; k++) in[k][lane] = a[k];
  for (int k = 0; k < 2 * nb * NT; k++) in[8 * MT + k][lane] = b[k];
  ++*queued;
}

void mkc_simt_mma_tf32_queue(const unsigned *a, const unsigned *b, int nb, int mt, int nt, int MT,
                             int NT) {
  mma_queue(a, b, 2, nb, mt, nt, MT, NT);
}

void mkc_simt_mma_tf32_1_queue(const unsigned *a, const unsigned *b, int mt, int nt, int MT,
                               int NT) {
  mma_queue(a, b, 1, 1, mt, nt, MT, NT);
}

/* The warp meets; the first lane released runs every queued product on the
 * accumulators c, as the lanes' mma.sync instructions would have one by one,
 * and each lane takes its accumulators back. The lanes' queues are emptied.
 * No warp barrier may come between the queue and its flush (the queue is
 * kept by barrier parity): a lane that met meanwhile finds its queue empty. */
void mkc_simt_mma_flush(float *c) {
  struct mkc_simt_fiber *f = self();
  warp *w = &f->block->warps[f->tid / WARP];
  int lane = f->tid % WARP, par = w->gen & 1, gen = w->gen, steps = w->mma_queued[par][lane];
  if (steps == 0) {
    fail("block %d thread %d: mma: a flush with nothing queued (or a warp barrier between the "
         "queue and the flush)",
         f->block->bid, f->tid);
    abandon(f);
  }
  int *shape = w->mma_shape[par][lane], mt = shape[1], nt = shape[2], MT = shape[3], NT = shape[4];
  shape[6] = steps;
  for (int k = 0; k < 4 * MT * NT; k++) memcpy(&w->mma_in[par][MMA_C_AT + k][lane], &c[k], 4);
  wait_at(f, WAIT_WARP);
  if (w->mma_gen[par] != gen + 1) { /* the first lane released computes the tiles */
    for (int l = 0; l < WARP; l++)
      if (memcmp(w->mma_shape[par][l], shape, 7 * sizeof *shape) != 0) {
        fail("block %d warp %d: mma: lane %d asks for another shape or number of products than "
             "lane %d (mma.sync needs the same in every lane)",
             f->block->bid, f->tid / WARP, l, lane);
        abandon(f);
      }
    mma_compute(w, par, steps, shape[5], shape[0], mt, nt, MT, NT);
    w->mma_gen[par] = gen + 1;
  }
  w->mma_queued[par][lane] = 0;
  for (int i = 0; i < mt; i++)
    for (int j = 0; j < nt; j++)
      for (int r = 0; r < 4; r++)
        c[(i * NT + j) * 4 + r] = w->mma_out[par][(i * NT + j) * 4 + r][lane];
}

void mkc_simt_mma_tf32(const unsigned *a, const unsigned *b, int nb, float *c, int mt, int nt,
                       int MT, int NT) {
  mkc_simt_mma_tf32_queue(a, b, nb, mt, nt, MT, NT);
  mkc_simt_mma_flush(c);
}

void mkc_simt_pause(void) {
  if (aborting()) abandon(self());
  if (!g.checking) {
    spin_turn();
    return;
  }
  struct mkc_simt_fiber *f = self();
  baton_pass(f->block, 0);
  baton_wait(f->block);
  if (aborting()) abandon(f);
}

/* ---- blocks ---- */

/* A fault in a fiber's guard zone is a stack overflow: say so, then let the
 * previous handler (normally the default: die) take the re-executed fault. */
static void on_segv(int sig, siginfo_t *si, void *uc) {
  (void)sig;
  (void)uc;
  struct mkc_simt_fiber *f = mkc_simt_cur.fiber;
  char *a = si->si_addr;
  if (f && a < f->stack && a >= f->stack - GUARD_BYTES) {
    char msg[200];
    int n = snprintf(msg, sizeof msg,
                     "mkc: error: simt: block %d thread %d overflowed its %zu KiB stack (large "
                     "local arrays in a template?)\n",
                     f->block->bid, f->tid, STACK_BYTES >> 10);
    if (n > 0) (void)!write(2, msg, (size_t)n);
  }
  sigaction(SIGSEGV, &g.old_segv, NULL);
}

static void install_segv_handler(void) {
  if (g.segv_installed) return;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_segv;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  if (sigaction(SIGSEGV, &sa, &g.old_segv) == 0) g.segv_installed = 1;
}

static void block_free_fibers(block *b) {
  if (b->stacks) munmap(b->stacks, (size_t)b->fiber_cap * (GUARD_BYTES + STACK_BYTES));
  free(b->fibers);
  free(b->warps);
  b->stacks = NULL;
  b->fibers = NULL;
  b->warps = NULL;
  b->fiber_cap = 0;
}

/* Sizes block b for a launch, reusing what the last launch left. */
static int block_prepare(block *b, int bid, int threads, size_t smem_bytes) {
  b->bid = bid;
  b->nthreads = threads;
  b->nwarps = threads / WARP;
  if (b->fiber_cap < threads) {
    block_free_fibers(b);
    size_t each = GUARD_BYTES + STACK_BYTES, bytes = (size_t)threads * each;
    void *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
    if (m == MAP_FAILED) {
      fail("block %d: cannot map %d fiber stacks (%zu MiB)", bid, threads, bytes >> 20);
      return -1;
    }
    b->stacks = m;
    b->fiber_cap = threads;
    for (int i = 0; i < threads; i++) {
      if (mprotect(b->stacks + (size_t)i * each, GUARD_BYTES, PROT_NONE) != 0) {
        fail("block %d: cannot protect fiber stack guards (vm.max_map_count too low for %d "
             "blocks x %d threads?)",
             bid, g.nblocks, threads);
        block_free_fibers(b);
        return -1;
      }
    }
    b->fibers = calloc((size_t)threads, sizeof *b->fibers);
    b->warps = calloc((size_t)threads / WARP, sizeof *b->warps);
    if (!b->fibers || !b->warps) {
      fail("out of memory");
      block_free_fibers(b);
      return -1;
    }
  }
  if (b->smem_cap < smem_bytes || !b->smem) {
    free(b->smem);
    b->smem_cap = (smem_bytes + 63) & ~(size_t)63;
    if (b->smem_cap == 0) b->smem_cap = 64;
    b->smem = aligned_alloc(64, b->smem_cap);
    if (!b->smem) {
      b->smem_cap = 0;
      fail("block %d: cannot allocate %zu bytes of shared memory", bid, smem_bytes);
      return -1;
    }
  }
  if (!b->alt_stack && !(b->alt_stack = malloc(ALT_STACK_BYTES))) {
    fail("out of memory");
    return -1;
  }
  return 0;
}

static void *block_main(void *arg) {
  block *b = arg;
  stack_t ss = {.ss_sp = b->alt_stack, .ss_size = ALT_STACK_BYTES, .ss_flags = 0};
  sigaltstack(&ss, NULL);
  memset(b->smem, SMEM_GARBAGE, g.smem_bytes);
  for (int i = 0; i < b->nthreads; i++) {
    struct mkc_simt_fiber *f = &b->fibers[i];
    f->block = b;
    f->tid = i;
    f->stack = b->stacks + (size_t)i * (GUARD_BYTES + STACK_BYTES) + GUARD_BYTES;
    ctx_make(&f->ctx, f->stack, STACK_BYTES, fiber_start);
  }
  for (int w = 0; w < b->nwarps; w++) {
    warp *wp = &b->warps[w];
    wp->gen = wp->n_at_warp = 0;
    coll_reset(wp);
    wp->sum_gen[0] = wp->sum_gen[1] = -1;
    wp->mma_gen[0] = wp->mma_gen[1] = -1;
    memset(wp->mma_queued, 0, sizeof wp->mma_queued);
  }
  b->n_at_block = b->n_done = b->bgen = 0;
  b->barriers_at_turn = 0;
  if (g.checking) {
    b->rng = g.seed ^ ((unsigned long long)g.launch_no << 32) ^ (unsigned long long)b->bid;
    next_random(&b->rng);
    baton_wait(b);
  }
  start_sweep(b);

  struct mkc_simt_fiber *first = pick_next(b);
  mkc_simt_cur.tid = first->tid;
  mkc_simt_cur.bid = b->bid;
  mkc_simt_cur.nblocks = g.nblocks;
  mkc_simt_cur.smem = b->smem;
  mkc_simt_cur.fiber = first;
  ctx_swap(&b->main, &first->ctx);
  /* back when every fiber returned, or on failure */
  mkc_simt_cur.fiber = NULL;
  if (g.checking) baton_pass(b, 1);
  ss.ss_flags = SS_DISABLE;
  sigaltstack(&ss, NULL);
  return NULL;
}

static int grow_blocks(int n) {
  if (n <= g.n_blocks_alloc) return 0;
  block **bs = realloc(g.blocks, (size_t)n * sizeof *bs);
  if (!bs) return -1;
  g.blocks = bs;
  for (; g.n_blocks_alloc < n; g.n_blocks_alloc++) {
    if (!(bs[g.n_blocks_alloc] = calloc(1, sizeof(block)))) return -1;
    pthread_cond_init(&bs[g.n_blocks_alloc]->baton_given, NULL);
  }
  return 0;
}

/* Reads MKC_SIMT_SEED: set, the launch runs on the checking schedule; the
 * baton goes first to a block drawn from the seed. */
static void checking_prepare(int blocks) {
  const char *seed = getenv("MKC_SIMT_SEED");
  if (!seed || !*seed) return;
  g.seed = strtoull(seed, NULL, 0);
  for (int i = 0; i < blocks; i++) {
    g.blocks[i]->running = 1;
    g.blocks[i]->stuck = 0;
  }
  g.baton_rng = g.seed ^ 0x5851f42d4c957f2dull * (g.launch_no + 1ull);
  g.stuck_turns = 0;
  g.holder = (int)(next_random(&g.baton_rng) % (unsigned long long)blocks);
  g.checking = 1;
}

int mkc_simt_checking(void) { return g.checking; }

int mkc_simt_launch(int blocks, int threads, size_t smem_bytes, mkc_simt_entry entry, void *arg) {
  if (blocks < 1 || blocks > MAX_BLOCKS) {
    fprintf(stderr, "mkc: error: simt: %d blocks: expected 1..%d\n", blocks, MAX_BLOCKS);
    return -1;
  }
  if (threads < WARP || threads > MAX_THREADS || threads % WARP) {
    fprintf(stderr, "mkc: error: simt: %d threads per block: expected a multiple of %d in %d..%d\n",
            threads, WARP, WARP, MAX_THREADS);
    return -1;
  }
  if (!entry) {
    fputs("mkc: error: simt: no entry function\n", stderr);
    return -1;
  }
  pthread_mutex_lock(&g.lock);
  g.aborting = 0;
  g.checking = 0;
  g.nblocks = blocks;
  g.smem_bytes = smem_bytes;
  g.entry = entry;
  g.arg = arg;
  install_segv_handler();
  int ok = grow_blocks(blocks) == 0;
  if (!ok) fail("out of memory");
  if (ok) checking_prepare(blocks);
  for (int i = 0; ok && i < blocks; i++)
    ok = block_prepare(g.blocks[i], i, threads, smem_bytes) == 0;

  int started = 0;
  if (ok) {
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, BLOCK_THREAD_STACK);
    for (; started < blocks; started++) {
      int err = pthread_create(&g.blocks[started]->thread, &attr, block_main, g.blocks[started]);
      if (err) {
        /* blocks already running may spin on a grid barrier: aborting frees them */
        fail("cannot start the thread of block %d of %d: %s", started, blocks, strerror(err));
        break;
      }
    }
    pthread_attr_destroy(&attr);
  }
  for (int i = 0; i < started; i++) pthread_join(g.blocks[i]->thread, NULL);
  g.launch_no++;
  int rc = aborting() ? -1 : 0;
  pthread_mutex_unlock(&g.lock);
  return rc;
}
