// runtime.cc: the process that runs the emulated GPU's kernels (package cuda/emu, proc.go).
//
// The Go side starts this program with the device memory (a memfd) as file descriptor 3 and
// sends it requests on stdin; it answers on stdout. Device memory is shared: the Go side
// uploads, downloads, fills and copies in its own mapping, and this process runs the kernels
// on the same pages. Every request is answered before the next is sent, so the two never touch
// memory at the same time.
//
// Execution: blocks run one after another (their __shared__ arrays are static, cuda_emu.h).
// In the concurrent schedule (the default) a block runs on as many OS threads as it has
// threads, all at once (Pool); in the deterministic one its threads are fibers on this
// thread, run one at a time in index order (Fibers). A thread that returns leaves its block's
// barrier and its warp, as a GPU thread that exits does. A barrier that some threads never
// reach, a warp exchange with lanes missing, a fault, or a bad launch ends the process with a
// message on stderr, which the Go side reports.
#include <errno.h>
#include <stdarg.h>
#include <string.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <sched.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>
#include <climits>

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "cuda_emu.h"

namespace rwemu {

thread_local Ctx* ctx;
intptr_t delta;

namespace {

// The kernel running now, for messages (set by the launching thread before the block's
// threads start; read by them and by the fault handler).
const char* current_kernel = "";

constexpr int kMaxThreads = 1024;
const std::chrono::nanoseconds kBarrierTimeout = std::chrono::seconds(60);
// kYields is how many times a waiting thread yields before it sleeps (RWEMU_YIELDS overrides it,
// for measurements): on an idle 2-core machine 16 yields made the warp-heavy op tests 2.8x faster
// than none, but 1.7x slower while another process kept a core busy; one yield keeps most of
// the gain (13.9 s against 12.1 s idle) and loses less when the machine is shared (39 s against 50 s).
int kYields = 1;


[[noreturn]] void die(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void die(const char* fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (n < 0) n = 0;
  if (n > (int)sizeof buf - 2) n = sizeof buf - 2;
  buf[n++] = '\n';
  ssize_t w = write(2, buf, n);
  (void)w;
  _exit(3);
}

long futex(std::atomic<uint32_t>* a, int op, uint32_t v, const struct timespec* ts) {
  return syscall(SYS_futex, reinterpret_cast<uint32_t*>(a), op, v, ts, nullptr, 0);
}

// Word is a 32-bit value threads wait on for a change, and the count of those asleep on it
// (so a change wakes them with a system call only when there are any).
struct Word {
  std::atomic<uint32_t> v{0};
  std::atomic<int> sleepers{0};

  // wait blocks until v differs from old: a few yields first (with hundreds of threads on a
  // few cores the threads still to arrive are usually runnable, and yielding lets them run
  // without the cost of sleeping and waking), then a futex wait. False after timeout (a
  // timeout of zero waits for ever).
  bool wait(uint32_t old, std::chrono::nanoseconds timeout, int yields = kYields) {
    for (int i = 0; i < yields; i++) {
      if (v.load(std::memory_order_acquire) != old) return true;
      sched_yield();
    }
    auto until = std::chrono::steady_clock::now() + timeout;
    while (v.load(std::memory_order_acquire) == old) {
      struct timespec ts, *tp = nullptr;
      if (timeout.count() > 0) {
        auto left = until - std::chrono::steady_clock::now();
        if (left <= std::chrono::nanoseconds(0)) return false;
        auto sec = std::chrono::duration_cast<std::chrono::seconds>(left);
        ts = {(time_t)sec.count(), (long)std::chrono::duration_cast<std::chrono::nanoseconds>(left - sec).count()};
        tp = &ts;
      }
      sleepers.fetch_add(1, std::memory_order_seq_cst);
      if (v.load(std::memory_order_seq_cst) == old) futex(&v, FUTEX_WAIT_PRIVATE, old, tp);
      sleepers.fetch_sub(1, std::memory_order_relaxed);
    }
    return true;
  }

  // set publishes a new value (release) and wakes the sleepers.
  void set(uint32_t nv) {
    v.store(nv, std::memory_order_seq_cst);
    if (sleepers.load(std::memory_order_seq_cst) > 0) futex(&v, FUTEX_WAKE_PRIVATE, INT32_MAX, nullptr);
  }
};

// Stack switching for the deterministic schedule's fibers. On x86-64 a six-register switch
// (the System V callee-saved registers and the stack pointer); elsewhere ucontext.
#if defined(__SANITIZE_THREAD__)
extern "C" {
void* __tsan_get_current_fiber(void);
void* __tsan_create_fiber(unsigned flags);
void __tsan_switch_to_fiber(void* fiber, unsigned flags);
}
#endif

struct Stack {
  char* mem = nullptr;
#if defined(__SANITIZE_THREAD__)
  void* tsan = nullptr;  // ThreadSanitizer's fiber (a switch is a synchronisation for it)
#endif
#if defined(__x86_64__)
  void* sp = nullptr;
#else
  ucontext_t uc;
#endif
};

// tsan_switch tells ThreadSanitizer that the thread moves from one fiber's stack to another's.
void tsan_switch(Stack* from, Stack* to) {
#if defined(__SANITIZE_THREAD__)
  if (from->tsan == nullptr) from->tsan = __tsan_get_current_fiber();  // the launching thread
  if (to->tsan == nullptr) to->tsan = __tsan_create_fiber(0);
  __tsan_switch_to_fiber(to->tsan, 0);
#else
  (void)from;
  (void)to;
#endif
}

#if defined(__x86_64__)
extern "C" void rwemu_switch(void** save_sp, void* to_sp);
asm(R"(
.text
.globl rwemu_switch
.type rwemu_switch,@function
rwemu_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
.size rwemu_switch,.-rwemu_switch
)");

void stack_init(Stack* s, size_t size, void (*entry)()) {
  uintptr_t top = (uintptr_t)(s->mem + size) & ~(uintptr_t)15;
  void** sp = (void**)top;
  *--sp = nullptr;         // where entry's return address would be: entry starts with rsp ≡ 8 (mod 16)
  *--sp = (void*)entry;    // popped by rwemu_switch's ret
  for (int i = 0; i < 6; i++) *--sp = nullptr;  // r15, r14, r13, r12, rbx, rbp
  s->sp = sp;
}
void stack_switch(Stack* from, Stack* to) {
  tsan_switch(from, to);
  rwemu_switch(&from->sp, to->sp);
}
#else
void stack_init(Stack* s, size_t size, void (*entry)()) {
  getcontext(&s->uc);
  s->uc.uc_stack.ss_sp = s->mem;
  s->uc.uc_stack.ss_size = size;
  s->uc.uc_link = nullptr;
  makecontext(&s->uc, entry, 0);
}
void stack_switch(Stack* from, Stack* to) {
  tsan_switch(from, to);
  swapcontext(&from->uc, &to->uc);
}
#endif

// Fibers is the deterministic schedule (EmuOptions.Deterministic): the threads of a block are
// fibers on the launching OS thread, run one at a time. A fiber runs until it waits at a
// barrier or returns; then the next runnable fiber in index order (cyclic) runs. Every atomic
// update lands in the same order on every run, so results are bit-reproducible; any such
// schedule is one a GPU may run, so correct kernels give correct results. Fibers persist from
// block to block: each loops over "run the kernel for the current block, then park".
struct Fibers {
  enum State : char { kFresh, kReady, kWaiting, kDone };
  struct Fiber {
    Stack stack;
    State state = kFresh;
    Ctx ctx;
  };
  static constexpr size_t kStackSize = 256 << 10;

  bool on = false;
  Stack main;
  Fiber f[kMaxThreads];
  int made = 0;  // fibers created so far
  int n = 0, cur = -1;
  Thunk fn = nullptr;
  const uint64_t* args = nullptr;

  // block suspends the running fiber at a barrier it is not the last to reach.
  void block() {
    f[cur].state = kWaiting;
    stack_switch(&f[cur].stack, &main);
  }
  void wake(int i) { f[i].state = kReady; }

  [[noreturn]] static void entry();
  void run_block(Thunk t, const uint64_t* a, Block* blk, uint3 bidx, dim3 bdim, dim3 gdim);
};
Fibers fibers;

// Barrier is a reusable barrier// Barrier is a reusable barrier whose party shrinks as threads leave (return from the kernel).
// The count is kept under a mutex (held for a few instructions); waiting is on a futex.
class Barrier {
 public:
  void reset(int n) {
    std::lock_guard<std::mutex> l(mu_);
    expected_ = n;
    arrived_ = 0;
  }
  void arrive_and_wait(const char* what) {
    if (fibers.on) {
      arrive_fiber();
      return;
    }
    uint32_t g;
    {
      std::lock_guard<std::mutex> l(mu_);
      g = gen_.v.load(std::memory_order_relaxed);
      if (++arrived_ == expected_) {
        release();
        return;
      }
    }
    if (!gen_.wait(g, kBarrierTimeout)) {
      std::lock_guard<std::mutex> l(mu_);
      die("deadlock: %s in kernel %s, block (%u,%u,%u): %d of %d threads arrived after %lld s", what,
          current_kernel, ctx->block_idx.x, ctx->block_idx.y, ctx->block_idx.z, arrived_, expected_,
          (long long)std::chrono::duration_cast<std::chrono::seconds>(kBarrierTimeout).count());
    }
  }
  void leave() {
    std::lock_guard<std::mutex> l(mu_);
    expected_--;
    if (arrived_ > 0 && arrived_ == expected_) release();
  }
  // leave_fiber is leave in the deterministic schedule.
  void leave_fiber() {
    expected_--;
    if (arrived_ > 0 && arrived_ == expected_) release_fiber();
  }

 private:
  void arrive_fiber() {
    if (++arrived_ == expected_) {
      release_fiber();
      return;  // the last to arrive runs on
    }
    waiters_[nwait_++] = ctx->linear;
    fibers.block();
  }
  void release_fiber() {
    arrived_ = 0;
    for (int k = 0; k < nwait_; k++) fibers.wake(waiters_[k]);
    nwait_ = 0;
  }
  void release() {  // mu_ held
    arrived_ = 0;
    gen_.set(gen_.v.load(std::memory_order_relaxed) + 1);
  }
  std::mutex mu_;
  int expected_ = 0, arrived_ = 0;
  Word gen_;
  int waiters_[kMaxThreads];  // the deterministic schedule's fibers waiting here
  int nwait_ = 0;
};

}  // namespace

struct Warp {
  Barrier bar;
  uint64_t slots[2][32];  // exchanges alternate between the two (one barrier each)
  int phase[32];          // per lane: the slot set of its next exchange
  std::atomic<unsigned> live;  // lanes that have not returned
};

struct Block {
  Barrier bar;
  Warp warps[kMaxThreads / 32];
};

void syncthreads() { ctx->block->bar.arrive_and_wait("__syncthreads"); }

uint64_t shfl_xor_bits(unsigned mask, uint64_t bits, int lane_mask, int width) {
  Warp* w = ctx->warp;
  if (width != 32) die("__shfl_xor_sync in kernel %s: width %d; the emulator exchanges whole warps (32)", current_kernel, width);
  unsigned live = w->live.load();
  if (mask != live || mask != 0xffffffffu) {
    die("__shfl_xor_sync in kernel %s, block (%u,%u,%u), lane %d: mask 0x%08x, but lanes 0x%08x are running: "
        "the emulator supports whole-warp exchanges only",
        current_kernel, ctx->block_idx.x, ctx->block_idx.y, ctx->block_idx.z, ctx->lane, mask, live);
  }
  // Exchange k writes set k mod 2 and reads it after the barrier. A lane can only write that
  // set again at exchange k + 2, after barrier k + 1, which every lane reaches only once it has
  // read its value of exchange k: one barrier per exchange suffices.
  int& ph = w->phase[ctx->lane];
  uint64_t* set = w->slots[ph];
  ph ^= 1;
  set[ctx->lane] = bits;
  w->bar.arrive_and_wait("__shfl_xor_sync");
  return set[(ctx->lane ^ lane_mask) & 31];
}

namespace {

// reset_block readies a block's barriers and warps for n threads.
void reset_block(Block* blk, int n) {
  blk->bar.reset(n);
  for (int w = 0; w * 32 < n; w++) {
    int lanes = n - w * 32 < 32 ? n - w * 32 : 32;
    unsigned m = lanes == 32 ? 0xffffffffu : ((1u << lanes) - 1);
    blk->warps[w].bar.reset(lanes);
    blk->warps[w].live.store(m);
    for (int l = 0; l < 32; l++) blk->warps[w].phase[l] = 0;
  }
}

// set_ctx fills what thread i of a block knows about itself.
void set_ctx(Ctx* c, int i, Block* blk, uint3 bidx, dim3 bdim, dim3 gdim) {
  c->block_dim = bdim;
  c->grid_dim = gdim;
  c->block_idx = bidx;
  c->thread_idx = uint3{i % bdim.x, (i / bdim.x) % bdim.y, i / (bdim.x * bdim.y)};
  c->block = blk;
  c->warp = &blk->warps[i / 32];
  c->lane = i % 32;
  c->linear = i;
}

}  // namespace

void Fibers::entry() {
  Fibers& fs = fibers;
  for (;;) {
    Fiber& me = fs.f[fs.cur];
    fs.fn(fs.args);
    me.ctx.warp->live.fetch_and(~(1u << me.ctx.lane));
    me.ctx.warp->bar.leave_fiber();
    me.ctx.block->bar.leave_fiber();
    me.state = kDone;
    stack_switch(&me.stack, &fs.main);  // parked until the next block runs this fiber
  }
}

void Fibers::run_block(Thunk t, const uint64_t* a, Block* blk, uint3 bidx, dim3 bdim, dim3 gdim) {
  n = (int)(bdim.x * bdim.y * bdim.z);
  fn = t;
  args = a;
  reset_block(blk, n);
  for (; made < n; made++) {
    Fiber& x = f[made];
    x.stack.mem = (char*)malloc(kStackSize);
    if (x.stack.mem == nullptr) die("no memory for the stack of fiber %d", made);
    stack_init(&x.stack, kStackSize, &Fibers::entry);
  }
  for (int i = 0; i < n; i++) {
    f[i].state = kFresh;
    set_ctx(&f[i].ctx, i, blk, bidx, bdim, gdim);
  }
  int done = 0;
  cur = n - 1;
  while (done < n) {
    int next = -1;
    for (int k = 1; k <= n; k++) {
      int j = (cur + k) % n;
      if (f[j].state == kFresh || f[j].state == kReady) {
        next = j;
        break;
      }
    }
    if (next < 0) die("deadlock in kernel %s: every thread that has not returned waits at a barrier", current_kernel);
    cur = next;
    ctx = &f[cur].ctx;
    stack_switch(&main, &f[cur].stack);
    if (f[cur].state == kDone) done++;
  }
  ctx = nullptr;
}

namespace {

struct Kernel {
  std::string name, kinds;
  Thunk fn;
};

std::vector<Kernel>& registry() {
  static std::vector<Kernel> r;
  return r;
}

// Pool runs the threads of one block at a time on persistent OS threads. A block starts when
// gen_ changes (futex wake-up of every worker); the last thread to finish wakes the launcher.
class Pool {
 public:
  void run_block(Thunk fn, const uint64_t* args, Block* blk, uint3 bidx, dim3 bdim, dim3 gdim) {
    if (fibers.on) {
      fibers.run_block(fn, args, blk, bidx, bdim, gdim);
      return;
    }
    int n = (int)(bdim.x * bdim.y * bdim.z);
    while ((int)threads_.size() < n) {
      int i = (int)threads_.size();
      threads_.emplace_back([this, i] { work(i); });
    }
    reset_block(blk, n);
    job_ = Job{fn, args, blk, bidx, bdim, gdim, n};
    remaining_.store(n, std::memory_order_relaxed);
    uint32_t d = done_.v.load(std::memory_order_relaxed);
    // The start word is a block counter (high bits) and the block's thread count (low 11
    // bits): a worker whose index is not below the count goes back to sleep without reading
    // job_, which the next block may already be rewriting.
    uint32_t g = gen_.v.load(std::memory_order_relaxed);
    gen_.set((((g >> 11) + 1) << 11) | (uint32_t)n);  // publishes job_
    done_.wait(d, std::chrono::nanoseconds(0), 0);
  }

 private:
  struct Job {
    Thunk fn;
    const uint64_t* args;
    Block* blk;
    uint3 bidx;
    dim3 bdim, gdim;
    int n;
  };

  void work(int i) {
    uint32_t seen = 0;
    Ctx c;
    ctx = &c;
    for (;;) {
      uint32_t g;
      gen_.wait(seen, std::chrono::nanoseconds(0));
      g = gen_.v.load(std::memory_order_acquire);
      seen = g;
      if (i >= (int)(g & 2047)) continue;
      const Job j = job_;
      set_ctx(&c, i, j.blk, j.bidx, j.bdim, j.gdim);
      j.fn(j.args);
      // The thread returns: it leaves its warp and its block's barrier.
      c.warp->live.fetch_and(~(1u << c.lane));
      c.warp->bar.leave();
      c.block->bar.leave();
      if (remaining_.fetch_sub(1, std::memory_order_acq_rel) == 1) done_.set(done_.v.load(std::memory_order_relaxed) + 1);
    }
  }

  std::vector<std::thread> threads_;
  Job job_{};
  Word gen_, done_;
  std::atomic<int> remaining_{0};
};

// I/O on the request pipe (stdin) and the reply pipe (stdout).
void read_full(void* p, size_t n) {
  char* b = (char*)p;
  while (n > 0) {
    ssize_t r = read(0, b, n);
    if (r == 0) _exit(0);  // the Go side closed the pipe: done
    if (r < 0) {
      if (errno == EINTR) continue;
      die("reading a request: %s", strerror(errno));
    }
    b += r;
    n -= r;
  }
}

void write_full(const void* p, size_t n) {
  const char* b = (const char*)p;
  while (n > 0) {
    ssize_t r = write(1, b, n);
    if (r < 0) {
      if (errno == EINTR) continue;
      _exit(4);
    }
    b += r;
    n -= r;
  }
}

uint32_t read_u32() {
  uint32_t v;
  read_full(&v, 4);
  return v;
}
uint64_t read_u64() {
  uint64_t v;
  read_full(&v, 8);
  return v;
}

void reply(uint32_t status, const std::string& msg) {
  uint32_t n = (uint32_t)msg.size();
  write_full(&status, 4);
  write_full(&n, 4);
  write_full(msg.data(), n);
}

std::string format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
std::string format(const char* fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  return buf;
}

void on_fault(int sig, siginfo_t* si, void*) {
  char buf[512];
  int n;
  if (ctx != nullptr) {
    n = snprintf(buf, sizeof buf, "fault: signal %d at address 0x%llx in kernel %s, block (%u,%u,%u), thread (%u,%u,%u)\n", sig,
                 (unsigned long long)((intptr_t)si->si_addr - delta), current_kernel, ctx->block_idx.x, ctx->block_idx.y,
                 ctx->block_idx.z, ctx->thread_idx.x, ctx->thread_idx.y, ctx->thread_idx.z);
  } else {
    n = snprintf(buf, sizeof buf, "fault: signal %d at address 0x%llx outside a kernel\n", sig,
                 (unsigned long long)((intptr_t)si->si_addr - delta));
  }
  if (n > 0) {
    ssize_t w = write(2, buf, n < (int)sizeof buf ? n : (int)sizeof buf);
    (void)w;
  }
  _exit(128 + sig);
}

enum Op : uint32_t { kInit = 1, kKernels = 2, kLaunch = 3, kProtect = 4 };

}  // namespace

Registrar::Registrar(const char* name, Thunk fn, const char* kinds) { registry().push_back(Kernel{name, kinds, fn}); }

}  // namespace rwemu

using namespace rwemu;

int main() {
  if (const char* y = getenv("RWEMU_YIELDS")) kYields = atoi(y);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_fault;
  sa.sa_flags = SA_SIGINFO;
  sigaction(SIGSEGV, &sa, nullptr);
  sigaction(SIGBUS, &sa, nullptr);
  sigaction(SIGFPE, &sa, nullptr);

  Pool pool;
  Block* blk = new Block;
  std::vector<uint64_t> args;
  for (;;) {
    uint32_t op = read_u32();
    switch (op) {
      case kInit: {
        uint64_t go_base = read_u64(), size = read_u64();
        uint32_t flags = read_u32();
        fibers.on = (flags & 1) != 0;
        void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, 3, 0);
        if (p == MAP_FAILED) {
          reply(1, format("mapping %llu bytes of device memory: %s", (unsigned long long)size, strerror(errno)));
          break;
        }
        delta = (intptr_t)p - (intptr_t)go_base;
        reply(0, "");
        break;
      }
      case kKernels: {
        std::string s;
        for (auto& k : registry()) s += k.name + " " + k.kinds + "\n";
        reply(0, s);
        break;
      }
      case kLaunch: {
        uint32_t id = read_u32();
        dim3 g{read_u32(), read_u32(), read_u32()};
        dim3 b{read_u32(), read_u32(), read_u32()};
        uint32_t shmem = read_u32(), nargs = read_u32();
        args.resize(nargs);
        if (nargs > 0) read_full(args.data(), 8 * (size_t)nargs);
        if (id >= registry().size()) {
          reply(1, format("no kernel %u", id));
          break;
        }
        Kernel& k = registry()[id];
        unsigned long long nt = (unsigned long long)b.x * b.y * b.z;
        if (nargs != k.kinds.size()) {
          reply(1, format("%s takes %zu arguments, %u given", k.name.c_str(), k.kinds.size(), nargs));
        } else if (b.x == 0 || b.y == 0 || b.z == 0 || nt > kMaxThreads || b.z > 64) {
          reply(1, format("%s: block (%u,%u,%u): at most %d threads, z at most 64", k.name.c_str(), b.x, b.y, b.z, kMaxThreads));
        } else if (g.x == 0 || g.y == 0 || g.z == 0 || g.x > 0x7fffffffu || g.y > 65535 || g.z > 65535) {
          reply(1, format("%s: grid (%u,%u,%u) out of range", k.name.c_str(), g.x, g.y, g.z));
        } else if (shmem != 0) {
          reply(1, format("%s: %u bytes of dynamic shared memory: not emulated", k.name.c_str(), shmem));
        } else {
          current_kernel = k.name.c_str();
          for (unsigned z = 0; z < g.z; z++)
            for (unsigned y = 0; y < g.y; y++)
              for (unsigned x = 0; x < g.x; x++) pool.run_block(k.fn, args.data(), blk, uint3{x, y, z}, b, g);
          current_kernel = "";
          reply(0, "");
        }
        break;
      }
      case kProtect: {
        uint64_t addr = read_u64(), len = read_u64();
        uint32_t guard = read_u32();
        void* p = (void*)((intptr_t)addr + delta);
        if (mprotect(p, len, guard ? PROT_NONE : (PROT_READ | PROT_WRITE)) != 0) {
          reply(1, format("mprotect(0x%llx, %llu): %s", (unsigned long long)addr, (unsigned long long)len, strerror(errno)));
        } else {
          reply(0, "");
        }
        break;
      }
      default:
        die("unknown request %u", op);
    }
  }
}
