// The sim platform: a virtual-time many-core machine (DESIGN.md sections 3 and 8, issue 4).
//
// WHAT IT IS
//   The same templated strategy, lock and WAL code that runs on ThreadsPlatform runs here
//   unchanged, with every client a fiber (Boost.Context) on one OS thread and every shared access
//   priced by a cost model. A Simulation owns the fibers, the scheduler and the machine state;
//   SimPlatform is the platform P (static functions, satisfying the Platform concept) that finds
//   the Simulation running on the calling OS thread through a thread_local pointer. One
//   Simulation per OS thread at a time; independent simulations may run on different OS threads
//   concurrently (they share nothing).
//
// SCHEDULER (what is serialized, what runs in parallel)
//   Each fiber has a virtual clock (ns). The scheduler keeps one event heap ordered by
//   (time, sequence number) and always resumes the earliest event; the sequence number breaks
//   ties, so a run is a pure function of (config, seed, fiber bodies): bit-identical everywhere.
//   A fiber runs on the real CPU until it is about to touch shared state (a P::Atomic,
//   P::Shared, P::Semaphore) while another event is earlier or at the same nanosecond; then it
//   yields. The running fiber gets no privilege: its next P operation is ordered like an event
//   created at that moment (the next sequence number), so anything already pending at the same
//   time (an `at` callback, a fiber woken or dispatched for then) goes first. Hence every
//   shared access executes when its fiber's (clock, sequence number) is the global minimum: the
//   simulated execution is a sequentially consistent interleaving ordered by virtual time. Costs are charged after the
//   access (the access takes effect at its start time; its cost delays the caller), except a
//   miss (a load, seq_cst store or RMW whose core must fetch the line or its ownership), which
//   takes effect when its request reaches the line (COST MODEL, "Misses"). Code that does
//   no P operation never yields: every loop must contain one (a spin loop needs P::spin_delay or a
//   load; an endless loop of plain C++ hangs the simulation like it would hang a real CPU).
//
// COST MODEL (parameters: SimConfig below; every default says where it comes from)
//   Cache lines: a P::Atomic / P::Shared / P::Semaphore object lives on line address/64; objects
//   that share a line share its state (an LWLock's state word and its neighbours). Per line: the
//   physical cores holding a valid copy, the core that owns it modified (if any), a "busy until"
//   time and a version (bumped by value-changing writes). A read by a holder is a hit; otherwise
//   the line comes from the owner or the nearest holder (same cluster, same socket, other socket)
//   or from memory. A write or read-modify-write invalidates every other copy (paying the
//   latency to the farthest holder), takes ownership and keeps the line busy until it finished:
//   RMWs (and stores) on one line therefore serialize; a reader that arrives while the line is
//   busy waits for it too. RMWs pay rmw_extra_ns on top (a locked instruction).
//   Misses: an access that misses (a load without a valid copy; a seq_cst store or RMW by a core
//   that does not own the line and has no unshared copy to upgrade) waits until the line is
//   free (max(issue, busy until)); its request then reaches the line half the transfer later
//   (priced from the holders at issue) and is ordered there: a load returns the value the line
//   holds at that instant, with the effect of every access ordered before it, and a store or RMW
//   takes effect then. The access yields at the arrival instant so that everything ordered
//   before it runs first; a time slice that expired by then preempts the fiber there, and the
//   access is served when it runs again, on whatever core, with no new request leg (the data
//   half goes to the new core). The line then serves it as a home agent that handles one
//   ownership transaction per line at a time would: if the line is free the data (or the
//   ownership) comes back in the other half of the transfer; if a store or RMW ordered before
//   it still holds the line, the request is served when the line frees, from the start: a
//   whole transfer. Either is priced, and counted, from where the line is when it is served
//   (the owner, else the nearest holder, else memory; the farthest copy to invalidate for a
//   store or RMW). Loads and ownership requests are ordered alike, first come, first served at
//   the line; a load does not hold the line (below). Why it matters: after a
//   spinlock's release every spinner's copy is invalid and all of them re-read it. Ordered at
//   issue, every one saw the lock free, sent a TAS that moved the line, and the holder's next
//   release queued behind them all: a handoff cost (spinners x transfer), which collapsed
//   info_lck on the 176-core machine past 64 clients (8 KiB messages: 112k tps at 64 clients,
//   31k at 196) where PostgreSQL's curve stays flat (3c037ff, loads only). Until e526924
//   stores and RMWs were still ordered at issue, so an RMW issued while a load waited or
//   travelled was served first: a head start for acquisitions that begin with an RMW (a TAS,
//   LWLockWaitListLock's fetch_or) over spinners that read first, which the one-socket tables
//   showed (fsync-off waitlist, 16 B, 256 clients: 27.4M wait-list-lock spins then 5.2M).
//   Departures: the request and data legs are equal halves of the transfer; the request leg
//   is priced at issue. A load does not hold the line: concurrent load misses of one line
//   proceed in parallel (nothing serves them one at a time; so after a test-and-test-and-set
//   lock's release every spinner can see it free and send its RMW, a herd that `walbench
//   calibrate` prints beside the machine's own, sim_ttas_failed_rmws_per_acquisition), and a store or RMW that reaches
//   the line while a load waits there for an earlier writer is served alongside that load (both
//   at busy until + a whole transfer), not after it. A load whose physical core received the
//   line while its request travelled (an SMT sibling's miss, served first) completes at hit
//   cost from its arrival, possibly before the sibling's data is back (the two misses merge,
//   the later one finishing up to half a transfer early); a sibling's miss already served
//   before the load was issued makes it a plain hit.
//   snoop_linger (0 by default): with 1, a request that reaches a busy line (or one where earlier
//   requests wait) is ordered not at its arrival but when its snoop lands at the holder: when the
//   line frees, the snoop travels there (half the transfer, the half the busy case already
//   prices), and the holder's own accesses issued before that instant are hits that come first
//   (one in flight finishes before the snoop is answered; a holder can fit about half a
//   transfer / (line_hit_ns + rmw_extra_ns) RMWs in, ~7 across sockets); the data comes back in
//   the other half, so the request's cost is unchanged, only its order. Later ownership requests
//   queue behind it (Line::queue_until); loads queue but do not hold the line (an ownership
//   request arriving after a queued load may land its snoop first); buffered stores and
//   streamed loads are ordered at issue and do not queue. Why it matters: a CAS loop (RocksDB's
//   LinkOne, LWLockAttemptLock) retries the instant its CAS fails, while the core still holds
//   the line; ordered at arrival, every request that reached the line during the failed CAS is
//   served first, the retry queues behind them and fails again, so the tries per success grow
//   with the contenders (about 0.4 per core in a pure CAS loop, sim_cas_loop_tries_per_success;
//   write_group's LinkOne at 256 clients on 480 vCPU: 242 tries per join, 2.7 at 64 clients;
//   results/README.md "Line hand-over"). With 1 the retry mostly wins the line (the next snoop
//   arrives after it). Which of the two a many-core machine is nearer, `walbench calibrate`
//   measures (a CAS loop on every CPU against both predictions). It is off by default because
//   the shipped results and the fidelity scores were made with 0, and with 1 PG 15's waitlist
//   collapse (fsync-off and no-spinlocks tables) is no longer reproduced (README "Platforms"):
//   a switch to adopt only with a full rerun.
//   request_at_issue (0 by default): with 1, a miss's request leaves at its issue even while
//   the line is busy (in flight to, or held by, another core's store or RMW), reaches the line
//   half the transfer later and waits there (served_at_line: when the line frees, a whole
//   transfer), as at a home agent or directory that queues requests for a line in transit.
//   With 0 (above) it leaves only when the line frees: the new holder's own accesses issued in
//   the half transfer before the request arrives are hits that come first. The difference
//   shows in two threads adding to one word with back-to-back fetch_adds (LOCK XADD), each
//   keeping the values it got: with 0, runs of about 1 + transfer / 2 / (line_hit_ns +
//   rmw_extra_ns) adds by one thread (12 at a 62 ns transfer with 1 + 2 ns; 9 at 92 ns with
//   1 + 5 ns), about 8 ns per add for the two together at 62 ns; with 1 the two alternate
//   (runs of 1.00, a transfer per add). Measured on the development VM (2 vCPUs of an Intel
//   Xeon under KVM, otherwise idle, 2026-12-05; harness/calibrate_cpu.h fetch_add_run_length,
//   `walbench calibrate`): runs of 3.10-3.14 adds (IQR 3.09-3.16, 15 rounds of 200,000 adds per
//   thread, three calibrate runs, whose ping-pong read 78-89 ns per one-way transfer and
//   1 + 5 ns per add; a standalone loop of 10^6 adds per thread: 2.55-3.11, 21-24 ns per add
//   for the two), against 8.0-9.0 with 0 and 1.00 with 1 predicted from the same run's
//   transfer, hit and RMW figures. Neither fits: the holder keeps the line for about two more
//   adds (7-12 ns of window at 6 ns per add give runs of 3), far less than 0's half transfer
//   and more than 1's nothing. Two vCPUs of a KVM guest, whose placement on the host is not
//   known: one measurement of one machine. (A first measurement, which noted each value's
//   owner in one array both threads wrote, read 1.23-1.34: those stores moved lines between
//   the two cores too and held each add back.) snoop_window_ns (0 by default; with 1 and
//   snoop_linger 0) models that: a request waiting at a busy line is ordered that long after
//   the line frees (await_snoop), so the holder's accesses issued meanwhile are hits that come
//   first, about one add per line_hit_ns + rmw_extra_ns of window; the data comes back a whole
//   transfer after the line freed, as without it. `walbench calibrate` fits the window to the
//   measured runs when they lie between the two rules (here 12 ns, the top of the 7-12 ns step
//   that gives runs of 3.00). The window must be 0 unless request_at_issue is 1 and snoop_linger
//   is 0 (validate).
//   Off by default because every shipped result was made with 0 and no window; what 1, with and
//   without a window, does to the fidelity scores: results/README.md "Line hand-over".
//   A plain (buffered) store is ordered at issue: its core goes on, and nothing waits for it.
//   A seq_cst store
//   (P::Atomic store(v), x86 xchg) costs like an RMW without the extra.
//   Store buffer (platform.h STORE ORDER): a plain store (P::Atomic store(v, release/relaxed),
//   P::Shared set) goes through the storing core's store buffer, as every x86 mov does. It takes
//   effect at once (the value is visible, the line is owned by the storer and busy for everyone
//   else exactly as after a seq_cst store: invalidation, ownership, busy_until = completion),
//   but the storer does not wait for it: its clock advances by line_hit_ns only. The store
//   completes at max(line free + the transfer latency, the fiber's previous buffered store's
//   completion) (stores drain in program order; each one's RFO starts when its line is free);
//   the fiber remembers the latest completion (Fiber::sb_until). A fence drains it: an RMW, a
//   seq_cst store and P::memory_barrier first advance the clock to sb_until, then pay their own
//   cost (memory_barrier's fence_ns is MFENCE with an empty buffer); so do the system calls
//   sleep_ns, storage_write and storage_sync (semaphore operations are RMWs already).
//   Loads pass buffered stores (TSO): the storer's load of a line it stored to is a hit (store
//   forwarding); its other loads proceed as usual. Not modelled: the buffer's capacity (x86:
//   ~56 entries; the lock and WAL paths issue a handful of stores between fences), stores
//   becoming visible late (memory stays sequentially consistent: only the cost is the store
//   buffer's), and a drain when a fiber leaves its CPU without an RMW or a system call.
//   OS: `cores` x `smt` hardware threads. A fiber needs one to run; a global FIFO run queue holds
//   the others. Dispatching a fiber onto a hardware thread costs context_switch_ns. A fiber that
//   waits on a semaphore, sleeps or waits for storage releases its hardware thread; post() makes
//   the waiter runnable semaphore_wake_ns later (jittered by the seed) when a hardware thread is
//   idle at the post and not already claimed by a waiter still on its way (the IPI and the exit
//   from idle that semaphore_wake_ns prices; the claim holds the thread for that waiter: no
//   other arrival takes it until the waiter arrives), and at once when none is: the waiter
//   joins the run queue, as Linux's try_to_wake_up enqueues a task on a busy CPU's runqueue with
//   no idle exit, and runs when a hardware thread frees (several posts in a row while one
//   hardware thread is idle: the first takes the idle wake-up, the rest queue at once).
//   Departures: a post finds the machine as the scheduler last left it (a CPU that frees
//   between the post and the poster's next synchronisation is not seen).
//   Idle polling (off while idle_poll_ns is 0, the default): an idle hardware thread first
//   polls for work for idle_poll_ns and only then halts (Linux's cpuidle-haltpoll in a KVM
//   guest that loads it, on a host that gives the realtime hint or with
//   cpuidle_haltpoll.force=1, polls up to guest_halt_poll_ns, 200 us by default; cpuidle's
//   poll state on bare metal lasts microseconds; a host's own halt polling shortens the exit
//   but keeps it). The
//   waker of a polling CPU sends no IPI (the poller sees its need-resched flag) and the CPU has
//   no idle state to leave, so a post whose waiter would be dispatched on a hardware thread idle
//   for less than idle_poll_ns makes the waiter runnable at once (context_switch_ns at the
//   dispatch as always); one idle for longer pays semaphore_wake_ns (the IPI and the exit from
//   halt: in a VM the halted vCPU's exit to the hypervisor and re-entry; on this project's KVM
//   guest 21 us after ~150 us of idle in presets/vm-2core.json, 31-47 us after 10 us-2 ms with
//   `walbench calibrate` of 2026-12-06, which finds idle_poll_ns 0 there as it runs (its kernel
//   command line forces haltpoll with guest_halt_poll_ns 0) and 200 us with guest_halt_poll_ns
//   set to 200 us by hand). So the price of a wake-up depends on the load: on a busy
//   machine CPUs are idle briefly and wakes are cheap, on a mostly idle one they are not.
//   Which hardware thread the waiter would take is decided at the post, as the dispatch picks
//   one (its last one if free, else the first free in placement order); a claim or a dispatch
//   between the post and the waiter's arrival may send it to another. Not modelled: the poll's
//   own CPU time (a polling thread is idle here), the host's halt polling (halt_poll_ns, which
//   shortens the exit but keeps it), adaptive poll windows, sleeps and I/O completions (they
//   pay no wake-up cost in this model, polling or not).
//   Wake-up preemption (wakeup_preemption 1 or 2): a fiber that wakes (a semaphore post, the end of
//   a sleep, an I/O completion) and finds no unclaimed free hardware thread joins the run queue
//   and (rule 1 always, rule 2 as below) ends the time slice of the fiber running on the
//   wakee's last hardware thread, which
//   leaves its CPU at its next P operation (a spinner parked on a line at once) for the back of
//   the run queue, as at a time-slice expiry; the CPU goes to the run queue's head, which past
//   the hardware threads is usually another fiber than the wakee. Linux: try_to_wake_up picks the wakee's previous CPU (or the
//   waker's) when no idle one is found and check_preempt_wakeup preempts its current task when
//   the wakee's vruntime is behind by more than the wakeup granularity (CFS: a sleeper is
//   placed up to sched_latency/2 = 12 ms behind min_vruntime, the granularity is 4 ms on >= 8
//   CPUs; EEVDF, 6.6+: when the wakee is eligible with the earlier virtual deadline).
//   Rule 1 preempts on every such wake-up, a thread that slept only briefly included. Rule 2
//   (wakeup_preemption 2) is CFS's: every fiber has a vruntime (its CPU time, all weights
//   equal), a woken fiber's is raised to at least the fair clock minus sleeper_credit_ns
//   (place_entity), and it preempts only when the fiber on its last hardware thread, the time
//   that one has run since its dispatch included, is ahead by more than wakeup_granularity_ns
//   (wakeup_preempt_entity). The fair clock stands in for the per-CPU min_vruntime: it
//   advances at (hardware threads in use) / (fibers running or queued) per ns, the vruntime
//   of a fiber that was always runnable; one clock for the machine, not one per CPU with
//   renormalisation on migration. The departure that decides rule 2's effect: CFS's
//   min_vruntime = max(min_vruntime, min(curr, leftmost)) follows the runnable tasks' own
//   vruntimes and does not move with wall time, while the fair clock runs at 1 per ns whenever
//   a CPU is in use and the run queue is empty. Where most fibers sleep (PostgreSQL backends
//   waiting on locks), every wakee is raised to the same floor, fair clock -
//   sleeper_credit_ns, and so was the fiber on its CPU when it woke: that one's lead is the
//   time it ran since minus the clock's advance, under the granularity while the run queue is
//   short, so rule 2 preempts only while the queue is long. Under CFS the floor stays put, so
//   CPU time a task gathers over many short runs counts toward its lead; whether that makes
//   such backends preempt is not modelled. Departures of both rules: the victim finishes the
//   P::work it is in before it leaves (any P operation after it, a lock operation included,
//   is where it leaves); the run queue stays one FIFO (no leftmost-vruntime pick), so the
//   wakee does not get the CPU it freed unless it is at the head. With 0, a queued waiter never preempts: it runs when a hardware
//   thread frees or a running fiber's time slice ends, and a spinning fiber keeps its hardware
//   thread meanwhile. Time slices: a fiber that
//   ran time_slice_ns while others wait in the run queue is preempted at its next P operation, or
//   at a miss's arrival instant ("Misses") (and
//   inside P::work). A spinning (parked) fiber keeps its hardware thread, like a real spinner.
//   Working set (off while working_set_bytes is 0): a thread's own data (stack, heap, for a
//   PostgreSQL backend its catalog and plan caches and executor state) is working_set_bytes.
//   A core's L2 holds the working sets of the last floor(core_cache_bytes / working_set_bytes)
//   threads dispatched on it, a cluster's (or socket's) L3 those of the last
//   floor(cluster_cache_bytes / working_set_bytes) dispatched in it (LRU; a thread's set lives
//   in one cache per level: it leaves the old one when it moves; the threads running on a core's
//   hardware threads are made the most recent there first, so a sibling's dispatch does not
//   evict them). A dispatch that does not find it in the core's L2 leaves a refill due:
//   working_set_bytes / 64 lines at cluster_cache_ns from the L3, or at memory_ns when the L3
//   lost it too, kRangeLineParallelism (24) lines in flight. It is charged when the thread's own
//   code next runs (SimPlatform::touch_working_set, called where a statement's work starts), at
//   most one refill however many dispatches came before: a waiter woken only to re-check a lock
//   and sleep again touches its stack and the lock, not its caches and plans. So a core that
//   time-shares more threads than its caches hold, or a thread that moved, pays a cold start per
//   transaction statement (Li, Ding and Shen, "Quantifying the cost of context switch", ExpCS
//   2007: the indirect cost of a switch grows with the working set and dominates the direct one
//   past the cache size). The charge is work: stretched by smt_work_factor while the SMT sibling
//   is busy (refill_ns counts it unstretched). A fiber spawned with keeps_working_set false (the
//   workload's client driver, whose own data is a few KiB) is outside the model: it neither
//   pays a refill nor takes a place in the caches. Departures: every dispatch makes the thread the
//   most recent in both caches, a waiter that only re-checks a lock included (it pays nothing
//   itself, but pushes other sets out); when the L2 holds fewer sets than the core has hardware
//   threads, siblings evict each other whatever the order; a move across sockets or clusters
//   refills from memory at memory_ns (no NUMA, no remote-cache latency), refills use no memory
//   bandwidth, and the
//   scheduler's placement (the last hardware thread if free, else the first free one in
//   placement order; one FIFO run queue) moves threads more than Linux's wake-affine placement
//   would, so refills from the L3 happen below the cache capacity too.
//   Work: P::work(ns) advances the clock; P::copy(dst, src, n) really copies and charges
//   n / copy_bytes_per_ns, or more if the machine-wide memory bandwidth is exhausted (one shared
//   FIFO bandwidth server). Both are stretched by smt_work_factor while an SMT sibling is busy.
//   SimPlatform::crc_work(n) charges a CRC of n bytes; storage_write / storage_sync model the
//   page cache and a device (sim_storage.cc): a pwrite copies into the page cache on the
//   caller's CPU (syscall_ns + n / page_cache_write_bytes_per_ns), concurrent pwrites share a
//   page-cache bandwidth server (page_cache_bytes_per_ns) and writers to one file serialise on
//   its inode lock; fdatasync waits for the device (FIFO, write bandwidth that may fluctuate
//   per period, fsync latency) with its CPU released, or, with nothing to wait for (fsync_ns 0
//   and no transfer due: always so with storage_write_bytes_per_ns 0, no device, WAL on
//   tmpfs), returns after syscall_ns on the caller's CPU.
//
// RANGES (sim_ranges.cc: WAL page bytes, P::touch_range)
//   WAL page bytes are plain memory, not P objects; P::touch_range(p, n, kind) charges their
//   coherence coarsely, without a Line per 64 bytes (a 1 MiB record would make 16384 of them).
//   State per 4 KiB block (kRangeBlockBytes): the core that last wrote into it (writer) and the
//   last other core that read it since (reader), -1 when none. Costs, on top of the P::copy or
//   storage write that moves the bytes (which charges bandwidth as for private memory):
//     write by core c: each full line of a block that another core holds (writer or reader)
//       costs transfer(holder, c) / kRangeLineParallelism (an RFO or invalidation, overlapped
//       with the next ones: current x86 cores keep some 16-32 L1/L2 misses in flight, taken as
//       24 a priori; the charge is added to the copy's bandwidth time, not overlapped with it,
//       which is pessimistic for streams of remote lines); a partial first or last line
//       (the bytes beside it belong to a neighbour record or header) costs one whole transfer
//       from the block's writer: the RFO must fetch the neighbour's bytes and nothing
//       overlaps it. Then writer = c, reader = -1.
//     read by core c of a block another core wrote: each line costs transfer(writer, c) /
//       kRangeLineParallelism; then reader = c (a second read by c is free).
//   transfer(a, b) is the line transfer between the two cores (same cluster, socket, other
//   socket); with two holders the farther one is paid. Blocks never touched cost nothing extra
//   (memory: the copy bandwidth already covers DRAM). Nothing is evicted: a ring page a lap
//   later still sits in its writer's caches (on the modelled machines the WAL ring, 16 MB,
//   fits in L3). Departures from a line model: a block has one writer, so two records copied
//   into one block by two cores at once look like the later one's, and the partial-line rule
//   assumes the neighbour's bytes came from the block's writer. Costs are not SMT-stretched and
//   touch no SimCounters (range_counters() counts them).
//
// RUNS (P::read_run: a scan of a dense array, GetSnapshotData's ProcGlobal->xids)
//   The objects of one cache line arrive together: the first object read on a line is a
//   streamed load (below), each further object on the same line is a hit (line_hit_ns, counted
//   in shared_ops and line_hits) with no yield in between, so the run's values on a line are
//   those it held when the line was read. As a loop of P loads, a write by another core between
//   two objects of one line would make the second a miss again; real cores read a line's 16
//   xids in a few ns, and one event per object made a 4,096-client snapshot cost 12,000
//   simulator events (the fsync-off matrix doubled). An approximation for speed: on the CLOG
//   config it moved group update's advantage over the exclusive update by a few percent
//   (core/clog/proc_array.h; measured at e8cde5a, before the misses of a run overlapped), so it
//   is used only where a load per object is too slow.
//   Streamed loads: a scan's loads do not depend on each other, so an out-of-order core keeps
//   several of its misses in flight (and the L2 streamer prefetches ahead of a sequential
//   scan). A line's first load is ordered at its issue (the fiber yields first to everything
//   earlier, like any P operation): a hit costs line_hit_ns; a miss costs the fiber line_hit_ns
//   to issue and its data is back a transfer later (from max(issue, the line's busy until), the
//   line priced and counted as a load miss's), while the fiber goes on with the next objects.
//   At most kRangeLineParallelism (24, the same a-priori figure as RANGES) misses are in flight:
//   a 25th waits until the oldest is back (a sliding window, Fiber::stream_slots). The fiber's
//   next P operation of any other kind (work, a spin iteration, a fence, a sleep, the fiber's
//   end included) first waits until every streamed miss is back (Fiber::stream_done), and a
//   clock read returns that time: consecutive runs with nothing between them (the dense scan:
//   per line of xids a run, then runs of the flags and subxid states of its running entries)
//   are one stream. Departures: a streamed miss is ordered at issue, not when its request
//   reaches the line ("Misses"), so a write that lands while it travels is not seen; the core
//   holds the line from the issue, so its SMT sibling (or a fiber dispatched there after a
//   preemption) hits it up to a whole transfer early ("Misses" bounds a sibling's merge at
//   half a transfer); a fiber preempted in the middle of a stream gives up its CPU with misses
//   in flight; hits are charged at latency, one after another, where a tight loop retires L1
//   hits faster.
//   Why: at thousands of clients GetSnapshotData's shared hold is a scan of 128-256 lines of
//   xids most of which other cores wrote since; priced one miss after another (from e8cde5a until
//   9d28240) it held ProcArrayLock a median 6.0 us at 2,048 clients on icelake_2s (16 B
//   waitlist, fsync-off), so the shared holds of the clients' snapshots overlapped with hardly
//   a gap and a ProcArray group-clear leader waited a median 1.6 ms for the exclusive lock.
//   read(i) is called uncharged (it must only load object i); the run ends any replay and spin
//   detection (a scan is not a spin), and its hits do not check the time slice (a preemption waits for
//   the next line's load, at most 15 hits later; a wait for a free miss slot is not interrupted,
//   the load after it checks).
//
// SPINNING
//   wait_while_eq(v): load; while the value equals v, park the fiber on the line until a
//   value-changing write to it, then load again (paying the transfer). No busy simulation.
//   Plain spin loops (load; spin_delay; load; ... as in s_lock and LWLockWaitListLock): after
//   spin_park_after consecutive loads of the same object that returned the same value from an
//   unchanged line, each followed by spin_delay, the fiber parks on the line in spin_delay,
//   until a value-changing write or spin_park_max_ns passed. When it is resumed at time G it
//   REPLAYS the iterations it skipped: while its clock is below G its loads of that object return
//   the value it saw (exact: the line did not change before G) and are charged as hits, spin_delay
//   charges pause_ns, P::work and P::memory_barrier are charged, without yielding. So the lock
//   code sees exactly as many spins as a real spinner (s_lock's spins_per_delay and its sleeps
//   happen at the right virtual times) for the price of one resume per wake-up. A sleep_ns inside
//   the replay starts at the fiber's own clock (exact) but is noticed by the scheduler only at G,
//   so the hardware thread is released up to spin_park_max_ns late; any other P operation ends
//   the replay and continues at G.
//
// DETERMINISM RULES
//   - No real time anywhere; randomness only from the seed (wake jitter).
//   - Lines get dense ids in first-touch order; nothing in the results depends on address values
//     or hash-map order. What does depend on addresses is which objects share a line: objects in
//     alignas(64) structures, fiber stacks (page aligned) and aligned heap blocks map the same way
//     in every run; an unaligned heap object's offset modulo 64 may differ between processes or
//     allocation histories. Give shared objects explicit alignment when their line matters.
//   - State outside P that survives a run must not leak into the next one on the same OS thread
//     (the locks' backend-local state lives in Proc::lock_local, fresh per cell: fine).
//   - Every P operation is part of the modelled program, debug-only ones too: the lock headers'
//     WALBENCH_LOCK_DCHECKs load P atomics in Debug builds only, so Debug and Release runs of the
//     same cell give different (each deterministic) numbers. The simulator itself gives the same
//     numbers at -O0 and -O2. Simulation::Uncharged turns P operations into plain ones for code
//     that the modelled program does not run.
//
// USING IT
//   Simulation sim(cfg, seed);
//   for (...) sim.spawn([&, i] { client_body(i); }, "client " + std::to_string(i));
//   sim.at(stop_ns, [&] { stop.store(true); });   // runs in scheduler context at that instant
//   SimOutcome out = sim.run(limit_ns);             // finished, time limit, or deadlock (+report)
//   run() returns as soon as every fiber finished (pending `at` callbacks are dropped), when the
//   next event lies beyond limit_ns (a later run() continues), or when no event is left while
//   fibers are still blocked (deadlock: out.message() names each fiber and what it waits on).
//   Outside run() (and in `at` callbacks) P operations act on plain memory at no cost; writes from
//   an `at` callback still wake parked spinners and post() still wakes semaphore waiters.
//   A fiber body that throws makes run() rethrow after stopping the scheduler. Fibers left
//   unfinished are unwound by ~Simulation() (or cancel_unfinished()) with an internal exception:
//   bodies must not swallow exceptions with catch (...) without rethrowing, and the objects they
//   reference must outlive the Simulation (declare the Simulation after them). During unwinding P
//   operations are plain; a Semaphore::wait that would block then aborts.
//
// FILES
//   sim_config.cc (SimConfig: JSON, presets, validation; counters and outcome reports), sim.cc
//   (construction, fibers, scheduler, dispatch onto hardware threads), sim_coherence.cc (cache
//   lines, P accesses, spinning), sim_os.cc (work, copies, CRC, fences, sleeps, semaphores),
//   sim_storage.cc (page cache and device), sim_internal.h (what they share).
//
// SANITIZERS
//   Fiber switches carry TSan (__tsan_switch_to_fiber) and ASan (__sanitizer_*_switch_fiber)
//   annotations, so the sim builds and runs under both. TSan sees one thread: it cannot find races
//   between fibers (there are none: fibers never run in parallel), only between OS threads.
#pragma once

#include <array>
#include <atomic>
#include <boost/context/fiber.hpp>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <exception>
#include <functional>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <type_traits>
#include <vector>

#include "core/platform/platform.h"

namespace walbench {

// Where fibers are placed when several hardware threads are free.
enum class SimPlacement {
  kSpread,   // round-robin over sockets, physical cores before SMT siblings (Linux-like spreading)
  kCompact,  // fill socket 0 first, then socket 1, ...; SMT siblings last
};

// Every parameter of the simulated machine. Defaults model a 2-socket Intel Xeon Platinum 8375C
// (Ice Lake-SP, 2 x 32 cores, AWS c6i.metal), the machine the core-to-core-latency table measured;
// presets (SimConfig::preset) model others. Times are ns, bandwidths bytes per ns (= GB/s).
struct SimConfig {
  // --- machine -----------------------------------------------------------------------------
  uint32_t cores = 64;             // physical cores, all sockets together
  uint32_t sockets = 2;            // cores are numbered socket-major; cores % sockets == 0
  uint32_t cores_per_cluster = 0;  // cores sharing an L3 slice group (AMD CCX: 8 on Zen 3/4);
                                   // 0 = the whole socket is one cluster (Intel mesh)
  uint32_t smt = 1;                // hardware threads per core (1 or 2; siblings share the L1)
  SimPlacement placement = SimPlacement::kSpread;

  // --- cache lines (nviennot/core-to-core-latency README, "Median Latency": CAS ping-pong
  //     between two pinned threads, i.e. one line transfer) ---------------------------------
  uint64_t line_hit_ns = 1;                 // L1 hit: 4-5 cycles at 3.5 GHz (AnandTech/Agner Fog)
  uint64_t same_cluster_transfer_ns = 51;   // used only with cores_per_cluster > 0 (Milan: 23)
  uint64_t same_socket_transfer_ns = 51;    // 8375C single socket: 51 ns
  uint64_t cross_socket_transfer_ns = 108;  // 8375C dual socket: 108 ns (2.1x)
  uint64_t memory_ns = 90;                  // line in no cache: DRAM load-to-use, Ice Lake-SP
                                            // ~80-100 ns (AnandTech memory latency charts)
  uint64_t rmw_extra_ns = 6;                // LOCK XADD / CMPXCHG: ~18-20 cycles (Agner Fog,
                                            // instruction tables, Ice Lake) beyond the line access
  uint64_t fence_ns = 10;                   // MFENCE with an empty store buffer, ~33 cycles
  uint32_t snoop_linger = 0;                // 1: the holder's accesses issued before a queued
                                            // request's snoop lands complete first (COST MODEL
                                            // "Misses", snoop_linger); 0: the request is
                                            // ordered at its arrival, ahead of them
  uint32_t request_at_issue = 0;            // 1: a miss's request leaves at issue and waits
                                            // at the line while it is busy (COST MODEL
                                            // "Misses", request_at_issue); 0: it leaves once
                                            // the line is free (every shipped result)
  uint64_t snoop_window_ns = 0;             // with request_at_issue 1: a request waiting at
                                            // a busy line is ordered this long after it frees
                                            // (the holder's accesses issued meanwhile are hits
                                            // that come first); 0: at once
  uint64_t pause_ns = 40;                   // PAUSE: ~140 cycles since Skylake-SP (Intel
                                            // optimization manual, 2.5.4) at 3.5 GHz

  // --- spinning ------------------------------------------------------------------------------
  uint32_t spin_park_after = 2;      // unchanged (load, spin_delay) pairs before a spinner parks;
                                     // 0 = never park plain loops (simulate every iteration)
  uint64_t spin_park_max_ns = 10000; // a parked spinner replays at least this often: bounds how
                                     // late a spinner's s_lock sleep releases its CPU

  // --- OS ------------------------------------------------------------------------------------
  uint64_t context_switch_ns = 1200;  // dispatching a thread onto a CPU: futex ping-pong between
                                      // two threads pinned on one core, ~1.2 us per switch
                                      // (Bendersky 2018, "Measuring context switching and memory
                                      // overheads for Linux threads")
  uint64_t time_slice_ns = 3000000;   // CFS sched_min_granularity on >= 8 CPUs (0.75 ms x 4);
                                      // EEVDF base_slice likewise
  uint32_t wakeup_preemption = 0;     // 1: a wake-up that finds no free CPU preempts the thread
                                      // on the wakee's last CPU (OS "Wake-up preemption"); 2:
                                      // only when the wakee's vruntime is behind that thread's
                                      // by more than wakeup_granularity_ns (CFS); 0: the wakee
                                      // waits in the run queue (the model before 2026-12-05)
  uint64_t wakeup_granularity_ns = 4000000;  // CFS sysctl_sched_wakeup_granularity on >= 8 CPUs
                                             // (1 ms x (1 + log2 8)); wakeup_preemption 2 only
  uint64_t sleeper_credit_ns = 12000000;     // CFS place_entity: a woken thread's vruntime is
                                             // raised to at least the fair clock (sim.h OS
                                             // "Wake-up preemption") minus this
                                             // (sched_latency 24 ms on >= 8 CPUs, halved by
                                             // GENTLE_FAIR_SLEEPERS); wakeup_preemption 2 only
  uint64_t semaphore_wake_ns = 1000;  // post -> waiter runnable on an idle CPU (IPI + wake-up;
                                      // not charged when no CPU is idle at the post: "OS");
                                      // with context_switch_ns it gives the ~2.2 us cross-core
                                      // futex wake-to-run of the same measurements (no deep
                                      // C-states; those add 10-100 us: calibrate measures it)
  uint64_t idle_poll_ns = 0;          // an idle hardware thread polls this long before it
                                      // halts; a post whose waiter would run on one idle for
                                      // less wakes it without semaphore_wake_ns (OS "Idle
                                      // polling"); 0 = no polling, every idle wake pays it
  uint64_t semaphore_post_ns = 500;   // the poster's futex_wake syscall when there is a waiter
  uint64_t semaphore_trylock_ns = 5;  // one failed PGSemaphoreTryLock in a spin loop beyond its
                                      // load: glibc sem_trywait's call, errno = EAGAIN and
                                      // PostgreSQL's EINTR/EAGAIN checks, ~15-20 instructions
                                      // (~5 ns at 3.5 GHz); replaces pause_ns in the spin loops
                                      // of --disable-spinlocks (SPIN_DELAY() is a no-op there)
  uint64_t sleep_slack_ns = 50000;    // nanosleep overshoot: default timer_slack_ns = 50 us
                                      // (prctl(2) PR_SET_TIMERSLACK)
  double wake_jitter = 0.2;           // semaphore wake and sleep slack are scaled by a factor
                                      // drawn uniformly in [1 - j, 1 + j] from the seed

  // --- caches: a thread's working set across dispatches (COST MODEL "Working set") ---------
  uint64_t working_set_bytes = 0;          // memory a thread touches between two dispatches (a
                                           // PostgreSQL backend's per-transaction footprint);
                                           // 0 = off: every dispatch finds its data warm
  uint64_t core_cache_bytes = 1310720;     // a core's private L2: 1.25 MiB on Ice Lake-SP
                                           // (Intel, 3rd Gen Xeon Scalable product brief)
  uint64_t cluster_cache_bytes = 56623104; // the L3 a cluster (or socket) shares: 54 MiB on the
                                           // 8375C (Intel ARK)
  uint64_t cluster_cache_ns = 25;          // L3 hit load-to-use, ~80 cycles on the Ice Lake-SP
                                           // mesh (order of magnitude: AnandTech latency charts)

  // --- work ----------------------------------------------------------------------------------
  double copy_bytes_per_ns = 12;              // one core's memcpy into L3/DRAM-resident buffers
                                              // (~12 GB/s single-core bandwidth, Ice Lake-SP)
  double memory_bandwidth_bytes_per_ns = 160; // machine-wide cap on bytes copied: 2 sockets x 8
                                              // DDR4-3200 channels ~ 2 x 160 GB/s STREAM traffic;
                                              // a copied byte is read and written: halved. 0 = off
  double crc_bytes_per_ns = 9;                // PostgreSQL's pg_comp_crc32c_sse42: one crc32q per
                                              // 8 bytes, 3-cycle latency chain = 2.7 B/cycle at
                                              // 3.5 GHz (interleaved/AVX-512 code reaches 20+)
  double smt_work_factor = 1.6;               // work and copy take this much longer while the SMT
                                              // sibling is busy (two threads ~1.25x one core)

  // --- storage: page cache (pwrite) and a modelled device (FIFO queue) ----------------------
  // A pwrite copies into the page cache on the caller's CPU. One writer goes at
  // page_cache_write_bytes_per_ns (0: at copy_bytes_per_ns, the model before page-cache
  // contention existed). Concurrent writers share page_cache_bytes_per_ns (a FIFO bandwidth
  // server: page allocation, LRU and dirty accounting are machine-wide) and the memory-bandwidth
  // server; writers to one file also serialise on its inode lock (i_rwsem, taken exclusive by
  // buffered writes on ext4 (ext4_buffered_write_iter: inode_lock) and XFS
  // (xfs_file_buffered_write: XFS_IOLOCK_EXCL)), when the caller names the file.
  double page_cache_write_bytes_per_ns = 0;  // one writer's buffered-write rate; 0 = copy rate
  double page_cache_bytes_per_ns = 0;        // all writers together; 0 = no shared cap (the
                                             // model before concurrent writers were modelled)
  double storage_write_bytes_per_ns = 2;  // datacenter NVMe sequential write ~2 GB/s
  uint64_t fsync_ns = 50000;              // fdatasync on NVMe with power-loss protection,
                                          // order of magnitude (pg_test_fsync; calibrate)
  uint64_t syscall_ns = 500;              // a system call's entry and exit (pwrite, fdatasync, SLRU file I/O)
  // Fluctuating device (off by default): the device's write bandwidth in each period of
  // storage_fluctuation_period_ns is storage_write_bytes_per_ns x (1 + f x u), u uniform in
  // [-1, 1] drawn from (seed, period number): deterministic, independent of the order of events.
  // For NVMe drives whose throughput swings under sustained writes (SLC cache, garbage
  // collection), like the 176-core table's (reference/README.md).
  double storage_fluctuation = 0;                 // f in [0, 1); 0 = constant bandwidth
  uint64_t storage_fluctuation_period_ns = 10000000;  // 10 ms per bandwidth level

  // --- simulator -------------------------------------------------------------------------------
  uint32_t stack_kib = 256;  // per fiber; mmap'ed with a guard page, touched pages only

  // JSON: every key above (placement as "spread"/"compact"). from_json starts from the defaults,
  // or from {"preset": NAME} if present, applies the other keys, rejects unknown ones (with a
  // "did you mean") and validates; "kind": "sim" is accepted and ignored. Errors throw
  // std::invalid_argument naming path_for_errors and the key ("<path>.<key>", or
  // "<path>/<key>" when path_for_errors is a JSON Pointer such as "/platform").
  // PRESET FILES (presets/README.md): a NAME ending in ".json" is a file. An absolute NAME is
  // read as is; a relative one is looked up in `preset_dir` (the directory of the config that
  // names it; "" = the current directory), then in the repository's presets/ directory
  // (WALBENCH_PRESETS_DIR, fixed at build time). The file is an object of the keys above plus
  // "description" (a string) and "sources" (a string, or an object from keys above to
  // strings), both ignored; it may name a builtin preset as its own base, but not another file
  // (one level). Its keys are validated like inline ones; then the object's other keys override
  // them. Errors inside the file read "<path>/preset: <file>: /<key>: <problem>".
  // RESOLVED FORM (what resolved_json() returns and a result cell records): every key of
  // to_json(), plus "preset" and "preset_file" when a preset was named. An object that holds
  // every key of to_json() takes nothing from its preset, so from_json() does not look the
  // preset up: the form stays valid, and gives the same machine, after the file is gone.
  // "preset_file" (a string: the absolute path that was read) is accepted only in that form.
  nlohmann::json to_json() const;
  static SimConfig from_json(const nlohmann::json& j, const std::string& path_for_errors,
                             const std::string& preset_dir = "");
  // The resolved form of a sim platform object: to_json() of from_json(j, ...), plus "preset"
  // as given and "preset_file", the absolute path of the preset file read (absent for a
  // builtin preset, or kept from j when j is already resolved). Throws as from_json.
  static nlohmann::json resolved_json(const nlohmann::json& j, const std::string& path_for_errors,
                                      const std::string& preset_dir = "");
  // Named machines from the core-to-core-latency tables: "icelake_2s" (the defaults),
  // "cascadelake_2s", "milan_2s", "milan_1s", "coffeelake_1s". Throws std::invalid_argument.
  static SimConfig preset(const std::string& name);
  static std::vector<std::string> preset_names();
  // Every key a sim platform object may hold ("kind", "preset", "preset_file", "placement" and
  // the fields).
  static std::vector<std::string> json_keys();
  // Every numeric parameter with its unit, allowed range and a one-line doc: the one table that
  // validate() checks and `walbench list platforms` prints (sim_config.cc, kParams).
  struct ParamInfo {
    std::string name;
    std::string unit;   // "ns", "bytes/ns (GB/s)", "cores", ...
    std::string range;  // as validate() enforces it: "1..4096", "> 0", "0..1 (1 excluded)"
    std::string doc;    // one line
  };
  static std::vector<ParamInfo> param_info();
  // Storage models: "nvme" (the defaults), "tmpfs" (page cache only: memcpy bandwidth, no
  // device latency). Throws std::invalid_argument.
  void set_storage(const std::string& name);
  // Throws std::invalid_argument naming path and field.
  void validate(const std::string& path) const;
};

// What happened, counted over the whole simulation.
struct SimCounters {
  uint64_t shared_ops = 0;          // executed accesses to P::Atomic/Shared/Semaphore lines
  uint64_t replayed_loads = 0;      // loads answered by a spinner's replay (not in shared_ops)
  uint64_t line_hits = 0;
  uint64_t cluster_transfers = 0;   // only with cores_per_cluster > 0
  uint64_t socket_transfers = 0;
  uint64_t cross_socket_transfers = 0;
  uint64_t memory_fetches = 0;
  uint64_t line_wait_ns = 0;        // time accesses waited for a busy line (at issue, or at
                                    // the line for an access ordered before theirs)
  uint64_t resumes = 0;             // scheduler -> fiber switches (real fiber switches / 2)
  uint64_t events = 0;              // events popped (incl. stale ones)
  uint64_t dispatches = 0;          // simulated context switches (a fiber put on a CPU)
  uint64_t cluster_cache_refills = 0;  // dispatches whose working set came from the L3
  uint64_t memory_refills = 0;         // dispatches whose working set came from DRAM
  uint64_t refill_ns = 0;              // time those refills charged
  uint64_t preemptions = 0;         // time-slice expiries with a non-empty run queue (those
                                    // a wake-up brought forward included)
  uint64_t wakeup_preemptions = 0;  // wake-ups that found no free CPU and cut the slice of the
                                    // thread on the wakee's last CPU (wakeup_preemption 1, 2)
  uint64_t semaphore_sleeps = 0;    // wait() that blocked
  uint64_t semaphore_wakes = 0;     // post() that woke a waiter
  uint64_t sleeps = 0;              // P::sleep_ns calls that slept
  uint64_t spin_parks = 0;          // plain spin loops parked
  uint64_t wait_parks = 0;          // wait_while_eq parks
  uint64_t park_wakes = 0;          // parks ended by a write to the line
  uint64_t copy_bytes = 0;
  uint64_t storage_writes = 0;
  uint64_t storage_syncs = 0;
  nlohmann::json to_json() const;
  bool operator==(const SimCounters&) const = default;
};

enum class SimStatus { kFinished, kTimeLimit, kDeadlock, kInterrupted };
const char* sim_status_name(SimStatus s);

struct SimFiberReport {
  size_t fiber = 0;
  std::string name;
  std::string state;  // "blocked on semaphore line #12", "spinning (parked) on line #3", ...
  uint64_t clock_ns = 0;
  std::string wait;   // describe_wait(fiber), if a hook is set
};

struct SimOutcome {
  SimStatus status = SimStatus::kFinished;
  uint64_t now_ns = 0;   // finished: the last fiber's end; time limit: until_ns; deadlock: when
  size_t fibers = 0;
  std::vector<SimFiberReport> unfinished;  // every fiber not finished, in spawn order
  SimCounters counters;
  bool finished() const { return status == SimStatus::kFinished; }
  std::string message() const;  // one line, then one line per unfinished fiber
};

// Shared state of a SimPlatform::Semaphore (plain: only the single-threaded simulation touches it).
struct SimSemState {
  uint32_t count = 0;
  int32_t head = -1;  // FIFO of blocked fibers (indices into the owning Simulation)
  int32_t tail = -1;
};

class Simulation {
 public:
  static constexpr size_t kNoFiber = std::numeric_limits<size_t>::max();
  static constexpr uint64_t kForever = std::numeric_limits<uint64_t>::max();

  Simulation(const SimConfig& cfg, uint64_t seed);
  ~Simulation();  // unwinds unfinished fibers (see USING IT)
  Simulation(const Simulation&) = delete;
  Simulation& operator=(const Simulation&) = delete;

  // A fiber that runs body; it becomes runnable at the current virtual time (0 before the first
  // run()). May be called before run(), from a fiber, or from an `at` callback. Returns its index.
  // keeps_working_set false: a thread whose own data is small next to working_set_bytes (the
  // workload's client driver): its dispatches neither refill nor take a place in the caches'
  // working-set LRU (COST MODEL "Working set").
  size_t spawn(std::function<void()> body, std::string name, bool keeps_working_set = true);
  // Call fn in scheduler context when virtual time reaches ns. Ties at ns go by sequence number:
  // fn runs before every fiber event at ns queued after it, and a fiber that runs into ns (its
  // next P operation at clock ns) yields to it. fn must not block; it may spawn, write P
  // objects, post.
  void at(uint64_t ns, std::function<void()> fn);
  // The harness's stop flag: the same as at().
  void request_stop_at(uint64_t ns, std::function<void()> at_stop) { at(ns, std::move(at_stop)); }
  // Run until every fiber finished, the next event lies beyond until_ns (fibers stay suspended;
  // a later run() continues), or nothing can happen any more while fibers are blocked
  // (deadlock). Rethrows an exception escaping a fiber body.
  SimOutcome run(uint64_t until_ns = kForever);
  // Unwind every unfinished fiber now (the destructor does it too).
  void cancel_unfinished();
  // Process-wide interrupt (walbench's SIGINT/SIGTERM handler, harness/interrupt.h): while set,
  // every run() on any thread returns before its next event with SimStatus::kInterrupted, its
  // fibers suspended as after a time limit. A lock-free atomic store: safe in a signal handler.
  static void set_interrupted(bool on) { interrupted_.store(on, std::memory_order_relaxed); }

  // Current virtual time: the running fiber's clock (or, while its streamed misses are in
  // flight, when they are all back: sim.h "RUNS"), else the scheduler's.
  uint64_t now_ns() const;
  const SimConfig& config() const { return cfg_; }
  const SimCounters& counters() const { return counters_; }

  // LINE STATISTICS (`walbench run --top-lines`): per cache line, the accesses executed on it
  // and its share of SimCounters::line_wait_ns (every wait is charged to the line it was for;
  // the shares add up to the counter). Off until keep_line_stats(), called before run(): a run's
  // timing is the same either way, the bookkeeping only adds host time. Loads counted are
  // executed ones (each object a P::read_run reads included, a parked spinner's replayed loads
  // not: SimCounters::replayed_loads); stores are seq_cst and buffered (release) ones alike.
  struct LineStats {
    uint64_t wait_ns = 0;
    uint64_t loads = 0;
    uint64_t load_misses = 0;  // loads that found no valid copy in their core at issue
    uint64_t rmws = 0;         // exchange, fetch_*, compare_exchange (failed ones included)
    uint64_t stores = 0;
  };
  struct LineReport {
    uintptr_t address;  // the line's first byte (changes from run to run with the heap)
    uint32_t id;        // the order of first touch in this simulation (the same in every rerun)
    LineStats stats;
  };
  void keep_line_stats() { line_stats_on_ = true; }
  // Every line accessed since keep_line_stats(), in no particular order.
  std::vector<LineReport> line_stats() const;
  // The `top` lines that waited longest between two line_stats() snapshots of one simulation
  // (then most RMWs, most loads, first touched), as the result file's platform.top_lines
  // (harness/RESULTS.md): each line's address, the names of the locks on it
  // (core/platform/line_names.h; null when none registered), its wait in ms and in us per
  // transaction (txns: the window's; 0 leaves that out) and its access counts.
  static nlohmann::json top_lines_json(const std::vector<LineReport>& at_open,
                                       const std::vector<LineReport>& at_close, size_t top,
                                       uint64_t txns);
  uint64_t seed() const { return seed_; }
  size_t num_fibers() const { return fibers_.size(); }
  const std::string& fiber_name(size_t i) const;
  bool fiber_finished(size_t i) const;
  uint64_t fiber_clock(size_t i) const;
  size_t current_fiber() const;  // kNoFiber outside a fiber
  // Hook for reports: what fiber i published as its wait (e.g. Proc::wait_event).
  void set_describe_wait(std::function<std::string(size_t fiber)> fn) { describe_wait_ = std::move(fn); }

  // The simulation running on this OS thread (inside run()), else nullptr.
  static Simulation* current() { return tl_sim_; }

  // While one exists, P operations on this OS thread are plain: no cost, no yield, no wake-ups.
  // Only for accesses the modelled program does not make (debug checks, instrumentation that
  // peeks at P objects); a write made under it is invisible to parked spinners.
  class Uncharged {
   public:
    Uncharged() : saved_(tl_sim_) { tl_sim_ = nullptr; }
    ~Uncharged() { tl_sim_ = saved_; }
    Uncharged(const Uncharged&) = delete;
    Uncharged& operator=(const Uncharged&) = delete;

   private:
    Simulation* saved_;
  };

  // Per-simulation state of a platform layer built over SimPlatform (core/platform/emulated.h
  // keeps its semaphore pools here): one T per Simulation, value-initialised on first use and
  // destroyed with the Simulation, so that simulations on different OS threads share none of it
  // and each starts from a fresh one (determinism with `walbench run -j N`).
  template <class T>
  T& layer_state() {
    for (Layer& l : layers_)
      if (l.key == &layer_key<T>) return *static_cast<T*>(l.state.get());
    T* t = new T();
    layers_.push_back(Layer{&layer_key<T>, LayerPtr(t, [](void* q) { delete static_cast<T*>(q); })});
    return *t;
  }

  // ---- Internal interface of SimPlatform (public for the templates below; not for users) ----
  // kWrite: a seq_cst store (drains the store buffer, pays the transfer); kBufferedWrite: a
  // plain store through the store buffer (COST MODEL).
  enum class Access : uint8_t { kRead, kWrite, kRmw, kBufferedWrite };
  template <class T> T sim_load(const T* p);
  template <class T> void sim_store(T* p, T v, Access k = Access::kWrite);
  void drain_store_buffer();
  template <class T, class F> T sim_rmw(T* p, F f);
  template <class T> bool sim_cas(T* p, T& expected, T desired);
  template <class T> T sim_wait_while_eq(const T* p, T v);
  template <class F> void sim_read_run(const char* first, size_t stride, size_t n, F& read);
  void sem_wait(SimSemState& s);
  void sem_post(SimSemState& s);
  bool sem_try_wait(SimSemState& s);
  void op_work(uint64_t ns);
  void op_copy(size_t n);
  void op_sleep(uint64_t ns);
  void op_spin_delay();
  void op_spin_no_pause();
  void spin_iteration(uint64_t charge_ns);  // op_spin_delay, op_spin_no_pause
  void op_fence();
  void op_crc(size_t n);
  void op_syscalls(uint32_t n);
  void op_touch_working_set();
  void op_storage_write(size_t n, const void* file);
  void op_storage_sync();
  static inline constinit thread_local Simulation* tl_sim_ = nullptr;

  // ---- WAL-byte ranges (sim_ranges.cc; "RANGES" at the top) -------------------------------
  static constexpr size_t kRangeBlockBytes = 4096;
  static constexpr uintptr_t kRunLineBytes = 64;  // RUNS: sim_internal::kLineBytes
  static constexpr uint32_t kRangeLineParallelism = 24;
  struct RangeCounters {
    uint64_t partial_line_transfers = 0;  // whole transfers for a first/last partial line
    uint64_t remote_lines_written = 0;    // full lines written that another core held
    uint64_t remote_lines_read = 0;       // lines read that another core wrote
    uint64_t charged_ns = 0;              // all range charges together
  };
  void op_touch_range(const void* p, size_t n, RangeAccess k);
  const RangeCounters& range_counters() const { return range_counters_; }
  struct RangeMap;  // block -> {writer, reader}; defined in sim_ranges.cc
  struct RangeMapDelete {
    void operator()(RangeMap* m) const;
  };
  std::unique_ptr<RangeMap, RangeMapDelete> range_map_;
  RangeCounters range_counters_;
  uint64_t range_line_ns(uint32_t from, uint32_t to) const;

 private:
  struct Fiber;
  struct Line {
    uint64_t busy_until = 0;  // RMW serialization: the line is in flight until then
    uint64_t queue_until = 0; // snoop_linger, snoop_window_ns: when the last request queued here
                              // will be served
    int32_t owner = -1;       // physical core holding it modified/exclusive, -1 if none
    uint32_t version = 0;     // value-changing writes
    int32_t parked_head = -1; // fibers parked on this line (doubly linked through Fiber)
  };
  struct Event {
    uint64_t time;
    uint64_t seq;
    uint32_t fiber;  // kTimer for `at` callbacks
    uint32_t token;  // fiber event generation (stale events are skipped); timer index
  };
  static bool earlier(const Event& a, const Event& b) {
    return a.time != b.time ? a.time < b.time : a.seq < b.seq;
  }
  struct FiberCancelled {};
  static constexpr uint32_t kTimer = ~uint32_t{0};
  static constexpr uint32_t kNoLine = ~uint32_t{0};

  // Fiber side (running on a fiber stack).
  uint32_t access(Fiber& f, const void* p, Access k);
  void stream_load(Fiber& f, const void* p);  // RUNS: a line's first load in a run
  void notify_write(uint32_t line, uint64_t at);
  void external_write(const void* p);
  bool replay_load(Fiber& f, const void* p, uint64_t* bits);
  void note_load(Fiber& f, const void* p, uint32_t line, uint64_t bits);
  void end_replay(Fiber& f);
  void sync(Fiber& f);           // settle_stream, then order
  void order(Fiber& f);          // yield to every earlier event (SCHEDULER)
  void settle_stream(Fiber& f);  // wait until the streamed misses in flight are back (RUNS)
  void slice_expired(Fiber& f);
  void yield_ready(Fiber& f);
  void park(Fiber& f, uint32_t line, uint64_t deadline, bool timed);
  void arm_untimed_parks();
  void park_waiter(Fiber& f, uint32_t line);
  void switch_out(Fiber& f);
  void fiber_main(Fiber& f);
  [[noreturn]] void wait_would_block(const char* what);

  // Scheduler side. heap_ is a binary min-heap on (time, seq); a yielding fiber swaps its own
  // event for the earliest one (pending_) in one sift instead of a push and a pop.
  void heap_push(const Event& e);
  Event heap_pop();
  void sift_down_from_root(const Event& e);
  void push_event(Fiber& f, uint64_t t);
  void resume(Fiber& f);
  void arrive(Fiber& f, uint64_t t);  // a waking fiber wants a CPU
  void preempt_for_wakeup(uint32_t hw, uint64_t t);
  bool wakeup_preempts(Fiber& wakee, uint32_t hw, uint64_t t) const;  // the CFS rule
  void advance_fair_clock(uint64_t t);  // OS "Wake-up preemption": fair_clock_ up to t
  void dispatch(Fiber& f, uint32_t hw, uint64_t t);
  void release_cpu(Fiber& f, uint64_t t);
  void refill_working_set(Fiber& f);  // COST MODEL "Working set": at dispatch
  void keep_core_occupants_warm(const Fiber& f);
  bool touch_cache(uint32_t level, Fiber& f, uint32_t cache, uint64_t capacity);
  int32_t pick_free_hw(int32_t preferred) const;
  void set_hw_free(uint32_t hw, bool free);
  // A free hardware thread that no posted waiter still on its idle wake-up has claimed (COST
  // MODEL "OS"): arrive() takes one only then, and sem_post charges an idle wake-up only then.
  bool unclaimed_hw_free() const;
  bool polling_cpu_for(const Fiber& w, uint64_t t) const;
  void unlink_parked(Fiber& f);
  void recompute_next_time();
  uint64_t jittered(uint64_t ns);
  uint32_t line_id(const void* p);
  enum class Distance : uint8_t { kHit, kCluster, kSocket, kCross, kMemory };
  Distance transfer_distance(uint32_t from, uint32_t to) const;
  Distance read_distance(uint32_t line, uint32_t core) const;
  Distance write_distance(uint32_t line, uint32_t core) const;
  uint64_t ns(Distance d) const;
  void count(Distance d);
  uint64_t served_at_line(uint32_t id, uint64_t arrival, uint64_t busy_until, Distance from);
  // When a miss's request leaves its core (COST MODEL "Misses", request_at_issue): at issue, or
  // once the line is free.
  uint64_t request_start(uint64_t issue, uint64_t busy_until) const {
    return cfg_.request_at_issue != 0 ? issue : std::max(issue, busy_until);
  }
  bool await_snoop(Fiber& f, uint32_t id, bool ownership, uint64_t extra = 0);
  void take_ownership(uint32_t line, uint32_t core, uint64_t busy_until);
  bool any_holder(uint32_t line, uint32_t lo, uint32_t hi, uint32_t except) const;
  bool sibling_busy(const Fiber& f) const;
  std::string describe(const Fiber& f) const;
  SimOutcome outcome(SimStatus st) const;

  const SimConfig cfg_;
  const uint64_t seed_;
  uint64_t rng_;
  uint32_t hw_threads_;
  uint32_t words_;  // 64-bit words per line holder set
  std::vector<uint32_t> socket_of_, cluster_lo_, cluster_hi_, socket_lo_, socket_hi_;
  std::vector<uint32_t> hw_order_pos_;   // hw -> position in placement order
  std::vector<uint32_t> pos_hw_;         // position -> hw
  std::vector<uint64_t> free_pos_bits_;  // free hardware threads by placement position
  // OS "Wake-up preemption" (wakeup_preemption 2): the fair clock (the vruntime a runnable
  // thread's fair share gives it: it advances at running / (running + queued) per ns) and the
  // instant it was last advanced to.
  double fair_clock_ = 0;
  uint64_t fair_clock_at_ = 0;
  uint32_t free_hw_ = 0;                 // how many bits free_pos_bits_ has set
  uint32_t idle_wakes_in_flight_ = 0;    // posted waiters charged semaphore_wake_ns, not arrived:
                                         // each will take one of the free hardware threads
  std::vector<int32_t> occupant_;        // hw -> fiber index or -1
  std::vector<uint64_t> idle_since_;     // hw -> when it last went idle (OS "Idle polling")
  static constexpr uint64_t kHaltedFromStart = ~uint64_t{0};  // never ran: not polling
  // Working-set residency (COST MODEL "Working set"): per level (0 = a core's L2, 1 = a
  // cluster's L3) and cache, an LRU list of the fibers whose working set it holds, most recent
  // first, linked through Fiber::lru_prev/lru_next; Fiber::cache_home says which cache.
  struct CacheLru {
    std::vector<int32_t> head, tail;
    std::vector<uint64_t> size;
  };
  CacheLru cache_lru_[2];
  std::vector<uint32_t> cluster_of_;  // core -> cluster index (the socket when no clusters)

  std::vector<std::unique_ptr<Fiber>> fibers_;
  std::vector<std::function<void()>> timers_;
  std::vector<Event> heap_;
  Event pending_{};            // the earliest event, taken out by yield_ready
  bool has_pending_ = false;
  uint64_t seq_ = 0;
  std::deque<uint32_t> runq_;
  std::vector<uint32_t> untimed_parked_;  // wait_while_eq parks without a deadline event
  Fiber* cur_ = nullptr;
  uint64_t now_ = 0;          // time of the last event the scheduler handled
  uint64_t last_start_ = 0;   // when the last access() took effect (a miss: when it was served at
                              // the line); the write and RMW paths pass it to notify_write
                              // right after their own access (spinners see the write from then)
  uint64_t end_clock_ = 0;    // latest clock of a finished fiber
  uint64_t next_time_ = kForever;  // earliest pending event (stale ones included), at most
                                   // limit_: a running fiber yields once its clock passes it
  uint64_t limit_ = kForever;      // until_ns of the current run()
  static inline std::atomic<bool> interrupted_{false};  // set_interrupted()
  static_assert(std::atomic<bool>::is_always_lock_free, "set_interrupted runs in a signal handler");
  size_t done_ = 0;
  bool running_ = false;
  std::exception_ptr error_;
  double bus_free_ = 0;       // memory-bandwidth server
  uint64_t device_free_ = 0;  // storage device FIFO
  uint64_t device_pending_ = 0;
  double page_cache_free_ = 0;  // page-cache bandwidth server (page_cache_bytes_per_ns)
  std::vector<std::pair<const void*, uint64_t>> inode_free_;  // file -> its i_rwsem is free at

  std::vector<Line> lines_;
  bool line_stats_on_ = false;
  std::vector<LineStats> line_stats_;  // by line id, with line_stats_on_ only
  LineStats* line_stat(uint32_t id) {
    if (!line_stats_on_) return nullptr;
    if (line_stats_.size() <= id) line_stats_.resize(lines_.size());
    return &line_stats_[id];
  }
  void add_line_wait(uint32_t id, uint64_t ns) {
    counters_.line_wait_ns += ns;
    if (LineStats* s = line_stat(id)) s->wait_ns += ns;
  }
  std::vector<uint64_t> holders_;  // lines_.size() * words_
  struct LineMap;
  std::unique_ptr<LineMap> line_map_;
  struct CacheSlot {
    uintptr_t key_plus_1 = 0;
    uint32_t id = 0;
  };
  std::vector<CacheSlot> line_cache_;

  SimCounters counters_;
  std::function<std::string(size_t)> describe_wait_;
  boost::context::fiber sched_;  // the scheduler's continuation while a fiber runs
  void* sched_tsan_ = nullptr;
  const void* sched_stack_lo_ = nullptr;
  size_t sched_stack_size_ = 0;
  void* sched_fake_stack_ = nullptr;

  using LayerPtr = std::unique_ptr<void, void (*)(void*)>;
  struct Layer {
    const void* key;
    LayerPtr state;
  };
  template <class T>
  static inline const char layer_key = 0;
  std::vector<Layer> layers_;  // layer_state()

  friend struct SimStackAlloc;
};

// One fiber. Defined here because the inline templates below touch a few fields.
struct Simulation::Fiber {
  enum class State : uint8_t {
    kWaking,    // no CPU; an event will bring it to arrive() (new, after sleep/post/io)
    kRunQueue,  // no CPU; in runq_
    kBlocked,   // no CPU; on a semaphore queue, no event
    kReady,     // has a CPU and an event to continue at
    kParked,    // has a CPU; parked on a line with a deadline event
    kCurrent,   // executing
    kDone,
  };
  enum class Wait : uint8_t { kStart, kSleep, kSemaphore, kStorage };

  boost::context::fiber ctx;
  std::function<void()> body;
  std::string name;
  uint32_t index = 0;
  State state = State::kWaking;
  Wait wait = Wait::kStart;
  bool cancel = false;
  bool spun = false;
  bool replay = false;
  uint32_t token = 0;
  uint64_t clock = 0;
  uint64_t sb_until = 0;  // when the last buffered store completes (COST MODEL "Store buffer")
  // Streamed loads (RUNS): when each of the last kRangeLineParallelism misses is back (a ring,
  // stream_next the oldest), and when all of them are.
  std::array<uint64_t, kRangeLineParallelism> stream_slots{};
  uint32_t stream_next = 0;
  uint64_t stream_done = 0;
  uint64_t event_time = 0;
  uint64_t slice_end = 0;
  uint64_t ready_at = 0;
  uint64_t wake_time = 0;
  double frac = 0;  // sub-ns remainder of copy / CRC charges
  int32_t hw = -1;
  int32_t last_hw = -1;
  bool dispatched_once = false;  // a later arrival is a wake-up (sleep, post, I/O), not a start
  double vruntime = 0;           // CPU time up to run_start, raised at a wake-up to the fair
                                 // clock's floor (OS "Wake-up preemption", rule 2)
  uint64_t run_start = 0;        // when it last got a CPU
  bool idle_wake_in_flight = false;  // counted in Simulation::idle_wakes_in_flight_
  uint32_t core = 0;  // physical core while on a CPU
  // Working-set residency per cache level (Simulation::cache_lru_): the cache holding it, -1
  // for none, and the LRU links there.
  int32_t cache_home[2] = {-1, -1};
  bool keeps_working_set = true;    // false: outside the working-set model (Simulation::spawn)
  uint64_t refill_due = 0;          // refill left due by a cold dispatch, charged at the next
  bool refill_from_memory = false;  // touch_working_set (and where it comes from)
  int32_t lru_prev[2] = {-1, -1};
  int32_t lru_next[2] = {-1, -1};
  // Semaphore queue (SimSemState) and what it waits on.
  int32_t sem_next = -1;
  SimSemState* sem = nullptr;
  uint32_t wait_line = kNoLine;
  // Parked on a line.
  uint32_t park_line = kNoLine;
  bool park_timed = false;  // has a deadline event (wait_while_eq parks untimed while no
                            // fiber waits for a CPU)
  int32_t park_prev = -1;
  int32_t park_next = -1;
  // Spin streak: the same object loaded repeatedly, same value, unchanged line, spin_delay
  // between the loads.
  const void* spin_addr = nullptr;
  uint64_t spin_bits = 0;
  uint32_t spin_line = 0;
  uint32_t spin_version = 0;
  uint32_t spin_count = 0;
  // Replay after a spin park: loads of replay_addr return replay_bits while clock < until.
  const void* replay_addr = nullptr;
  uint64_t replay_bits = 0;
  uint64_t replay_until = 0;
  std::exception_ptr error;
  // Sanitizer bookkeeping.
  void* tsan = nullptr;
  const void* stack_lo = nullptr;
  size_t stack_size = 0;
  void* fake_stack = nullptr;
};

namespace sim_detail {
template <class T>
inline constexpr bool kValue = std::is_trivially_copyable_v<T> && sizeof(T) <= 8;
template <class T>
inline uint64_t to_bits(const T& v) {
  uint64_t b = 0;
  std::memcpy(&b, &v, sizeof(T));
  return b;
}
template <class T>
inline T from_bits(uint64_t b) {
  T v;
  std::memcpy(&v, &b, sizeof(T));
  return v;
}
}  // namespace sim_detail

// ---- value operations (hot path) ---------------------------------------------------------------
template <class T>
T Simulation::sim_load(const T* p) {
  Fiber* f = cur_;
  if (f == nullptr) return *p;  // scheduler context: plain
  if (f->replay) {
    uint64_t bits;
    if (replay_load(*f, p, &bits)) return sim_detail::from_bits<T>(bits);
  }
  const uint32_t line = access(*f, p, Access::kRead);
  const T v = *p;
  note_load(*f, p, line, sim_detail::to_bits(v));
  return v;
}

template <class T>
void Simulation::sim_store(T* p, T v, Access k) {
  Fiber* f = cur_;
  if (f == nullptr) {
    const bool changed = !(*p == v);
    *p = v;
    if (changed) external_write(p);
    return;
  }
  const uint32_t line = access(*f, p, k);
  const bool changed = !(*p == v);
  *p = v;
  if (changed) notify_write(line, last_start_);
}

template <class T, class F>
T Simulation::sim_rmw(T* p, F fn) {
  Fiber* f = cur_;
  if (f == nullptr) {
    const T old = *p;
    *p = fn(old);
    if (!(*p == old)) external_write(p);
    return old;
  }
  const uint32_t line = access(*f, p, Access::kRmw);
  const T old = *p;
  *p = fn(old);
  if (!(*p == old)) notify_write(line, last_start_);
  return old;
}

template <class T>
bool Simulation::sim_cas(T* p, T& expected, T desired) {
  Fiber* f = cur_;
  uint32_t line = kNoLine;
  if (f != nullptr) line = access(*f, p, Access::kRmw);  // lock cmpxchg owns the line either way
  if (!(*p == expected)) {
    expected = *p;
    return false;
  }
  const bool changed = !(*p == desired);
  *p = desired;
  if (changed) {
    if (f != nullptr) notify_write(line, last_start_);
    else external_write(p);
  }
  return true;
}

// RUNS (at the top). The first object on each line is a streamed load; the others on that
// line follow at line_hit_ns each, with no yield in between; read(i) itself is uncharged.
template <class F>
void Simulation::sim_read_run(const char* first, size_t stride, size_t n, F& read) {
  Fiber* f = cur_;
  if (f == nullptr) {
    for (size_t i = 0; i < n; ++i) read(i);
    return;
  }
  uintptr_t line_of_last = ~uintptr_t{0};
  for (size_t i = 0; i < n; ++i) {
    const uintptr_t addr = reinterpret_cast<uintptr_t>(first + i * stride);
    if (addr / kRunLineBytes != line_of_last) {
      stream_load(*f, first + i * stride);
      line_of_last = addr / kRunLineBytes;
    } else {
      ++counters_.shared_ops;
      ++counters_.line_hits;
      if (line_stats_on_) ++line_stat(line_id(first + i * stride))->loads;
      f->clock += cfg_.line_hit_ns;
    }
    Uncharged plain;
    read(i);
  }
  f->spin_addr = nullptr;  // a scan is not a spin on any of its objects
}

template <class T>
T Simulation::sim_wait_while_eq(const T* p, T v) {
  Fiber* f = cur_;
  if (f == nullptr) {
    if (!(*p == v)) return *p;
    wait_would_block("Atomic::wait_while_eq in scheduler context");
  }
  if (f->replay) end_replay(*f);
  for (;;) {
    const T cur = sim_load(p);
    if (!(cur == v)) return cur;
    park_waiter(*f, f->spin_line);  // sim_load's note_load recorded this object's line
  }
}

// ---- the platform -----------------------------------------------------------------------------
struct SimPlatform {
  static constexpr const char* name = "sim";

  template <class T>
  class Atomic {
    static_assert(sim_detail::kValue<T>, "SimPlatform::Atomic<T>: T must be trivially copyable, <= 8 bytes");

   public:
    Atomic() = default;
    explicit Atomic(T v) : v_(v) {}
    Atomic(const Atomic&) = delete;
    Atomic& operator=(const Atomic&) = delete;

    T load() const {
      Simulation* s = Simulation::tl_sim_;
      return s == nullptr ? v_ : s->sim_load(&v_);
    }
    // seq_cst: pays the line transfer on the spot (xchg); release / relaxed: a buffered store
    // (COST MODEL "Store buffer").
    void store(T v, std::memory_order order = std::memory_order_seq_cst) {
      Simulation* s = Simulation::tl_sim_;
      if (s == nullptr) v_ = v;
      else
        s->sim_store(&v_, v,
                     order == std::memory_order_seq_cst ? Simulation::Access::kWrite
                                                        : Simulation::Access::kBufferedWrite);
    }
    T fetch_add(T d) { return rmw([d](T o) { return static_cast<T>(o + d); }); }
    T fetch_sub(T d) { return rmw([d](T o) { return static_cast<T>(o - d); }); }
    T fetch_or(T d) { return rmw([d](T o) { return static_cast<T>(o | d); }); }
    T fetch_and(T d) { return rmw([d](T o) { return static_cast<T>(o & d); }); }
    T exchange(T v) { return rmw([v](T) { return v; }); }
    bool compare_exchange(T& expected, T desired) {
      Simulation* s = Simulation::tl_sim_;
      if (s != nullptr) return s->sim_cas(&v_, expected, desired);
      if (!(v_ == expected)) {
        expected = v_;
        return false;
      }
      v_ = desired;
      return true;
    }
    // Parks until the line is written (see SPINNING); returns the new value.
    T wait_while_eq(T v) const {
      Simulation* s = Simulation::tl_sim_;
      if (s != nullptr) return s->sim_wait_while_eq(&v_, v);
      if (v_ == v) {
        std::fprintf(stderr, "SimPlatform::Atomic::wait_while_eq outside a simulation would spin forever\n");
        std::abort();
      }
      return v_;
    }

   private:
    template <class F>
    T rmw(F f) {
      Simulation* s = Simulation::tl_sim_;
      if (s != nullptr) return s->sim_rmw(&v_, f);
      const T old = v_;
      v_ = f(old);
      return old;
    }
    T v_{};
  };

  // Plain shared data: charged like a line access (get = load, set = a plain, buffered store).
  template <class T>
  class Shared {
    static_assert(sim_detail::kValue<T>, "SimPlatform::Shared<T>: T must be trivially copyable, <= 8 bytes");

   public:
    Shared() = default;
    explicit Shared(T v) : v_(v) {}
    T get() const {
      Simulation* s = Simulation::tl_sim_;
      return s == nullptr ? v_ : s->sim_load(&v_);
    }
    void set(T v) {
      Simulation* s = Simulation::tl_sim_;
      if (s == nullptr) v_ = v;
      else s->sim_store(&v_, v, Simulation::Access::kBufferedWrite);
    }

   private:
    T v_{};
  };

  // A counting semaphore (PGSemaphore). Its count word is a line (wait/post are RMWs of it).
  class Semaphore {
   public:
    void wait();
    void post();
    bool try_wait();

   private:
    SimSemState st_;
  };

  static uint64_t now_ns() {
    Simulation* s = Simulation::tl_sim_;
    return s == nullptr ? 0 : s->now_ns();
  }
  static void work(uint64_t ns) {
    if (Simulation* s = Simulation::tl_sim_) s->op_work(ns);
  }
  static void copy(void* dst, const void* src, size_t n) {
    std::memcpy(dst, src, n);
    if (Simulation* s = Simulation::tl_sim_) s->op_copy(n);
  }
  static void touch_range(const void* p, size_t n, RangeAccess k) {
    if (Simulation* s = Simulation::tl_sim_) s->op_touch_range(p, n, k);
  }
  template <class F>
  static void read_run(const void* first, size_t stride, size_t n, F&& read) {
    if (Simulation* s = Simulation::tl_sim_) s->sim_read_run(static_cast<const char*>(first), stride, n, read);
    else
      for (size_t i = 0; i < n; ++i) read(i);
  }
  static void sleep_ns(uint64_t ns) {
    if (Simulation* s = Simulation::tl_sim_) {
      s->drain_store_buffer();  // a system call
      s->op_sleep(ns);
    }
  }
  static void spin_delay() {
    if (Simulation* s = Simulation::tl_sim_) s->op_spin_delay();
  }
  static void memory_barrier() {
    std::atomic_signal_fence(std::memory_order_seq_cst);
    if (Simulation* s = Simulation::tl_sim_) {
      s->drain_store_buffer();  // MFENCE waits for the store buffer, then costs fence_ns
      s->op_fence();
    }
  }
  // pg_write_barrier on x86 is a compiler barrier (arch-x86.h: stores are not reordered with
  // stores): nothing to charge, and the store buffer drains in order as it is.
  static void write_barrier() { std::atomic_signal_fence(std::memory_order_seq_cst); }

  // Sim-only extras (not part of the Platform concept).
  // The client's own code starts (a statement's parse/plan/execute): a refill of its working set
  // left due by a cold dispatch is charged now (COST MODEL "Working set").
  static void touch_working_set() {
    if (Simulation* s = Simulation::tl_sim_) s->op_touch_working_set();
  }
  // CPU time of a CRC-32C over n bytes (crc_bytes_per_ns).
  static void crc_work(size_t n) {
    if (Simulation* s = Simulation::tl_sim_) s->op_crc(n);
  }
  // n system calls that touch no modelled device (syscall_ns each, CPU held).
  static void syscalls(uint32_t n) {
    if (Simulation* s = Simulation::tl_sim_) s->op_syscalls(n);
  }
  // One iteration of a spin loop that executes no PAUSE (PostgreSQL's --disable-spinlocks: a
  // failed PGSemaphoreTryLock, SPIN_DELAY() a no-op): charges semaphore_trylock_ns instead of
  // pause_ns; a spinner that keeps reading the same unchanged line parks like in spin_delay.
  static void spin_no_pause() {
    if (Simulation* s = Simulation::tl_sim_) s->op_spin_no_pause();
  }
  // pwrite of n bytes to the modelled device's page cache: CPU (syscall + copy), core held.
  // `file` names the file written (any address that identifies it): writes to one file
  // serialise on its inode lock; nullptr = a file no other writer touches concurrently.
  static void storage_write(size_t n, const void* file = nullptr) {
    if (Simulation* s = Simulation::tl_sim_) {
      s->drain_store_buffer();
      s->op_storage_write(n, file);
    }
  }
  // fdatasync: blocks (CPU released) until the device wrote everything written so far.
  static void storage_sync() {
    if (Simulation* s = Simulation::tl_sim_) {
      s->drain_store_buffer();
      s->op_storage_sync();
    }
  }
};

static_assert(Platform<SimPlatform>);

// The CAS-loop micro-benchmark `walbench calibrate` runs on the real machine
// (harness/calibrate_cpu.h cas_loop_contention), run on the simulated machine `cfg`: `threads`
// fibers (at most cfg's hardware threads, placed by its placement) each add 1 to one word
// `wins` times with a CAS loop (load once, then CAS until it succeeds, as RocksDB's LinkOne and
// LWLockAttemptLock do). Returns the CAS tries per success: with snoop_linger 0 about 0.4 x
// threads (a failed CAS's retry queues behind the others' requests), with 1 about 1.2-1.4.
double sim_cas_loop_tries_per_success(const SimConfig& cfg, uint32_t threads, uint32_t wins);

// The test-and-test-and-set lock `walbench calibrate` measures on the real machine
// (harness/calibrate_cpu.h ttas_lock_contention), run on the simulated machine `cfg`: `threads`
// fibers (at most cfg's hardware threads) each take one lock word `acquisitions` times as
// LWLockWaitListLock takes an LWLock's wait-list bit (fetch_or; while the bit was set, spin
// reading the word with one SPIN_DELAY per read, then fetch_or again), store once to a second
// shared line (the wait list's links) and release with fetch_and. Returns the failed fetch_ors
// per acquisition: how many spinners saw the released word free and sent an RMW that found it
// taken again (the herd after each release). Loads of one line proceed in parallel here (COST
// MODEL "Misses"), so every spinner that re-reads after a release can see it free: the figure
// grows with the spinners; a machine that serves those reads one at a time shows fewer.
// Counted until the first fiber is done (the others' uncontended tail left out); NaN if the
// simulation did not finish.
double sim_ttas_failed_rmws_per_acquisition(const SimConfig& cfg, uint32_t threads,
                                            uint32_t acquisitions);

// The line hand-over micro-benchmark `walbench calibrate` runs on two real CPUs
// (harness/calibrate_cpu.h fetch_add_run_length), on the simulated machine `cfg` (at least two
// hardware threads): two fibers each add 1 to one word `adds` times with back-to-back
// fetch_adds (LOCK XADD) and note which of them got each value. Returns the mean run length,
// owner_run_length below. With request_at_issue 0 a holder's adds issued before the other's
// request reaches the freed line come first: about transfer / 2 / (line_hit_ns + rmw_extra_ns)
// adds per run (12 at 62 ns); with 1 the request already waits there: runs of 1.
double sim_fetch_add_run_length(const SimConfig& cfg, uint32_t adds);

// owner[v] names the thread (0 or 1) that got value v of a shared counter: the mean length of
// the runs of consecutive values one thread got, counted from the first value after which both
// have got one to the last before one of them stopped (the stretch where both were adding);
// 0 when there is no such stretch.
double owner_run_length(const std::vector<uint8_t>& owner);

}  // namespace walbench
