// AsyncChain.swift — stacksnap's Swift async walk against real Swift
// concurrency: contexts laid out by the Swift compiler and runtime, not by
// hand (tests/capture/test_async_frames.c builds them with clang's
// swiftasynccall).
//
// Two scenarios, each in its own detached task, each a chain of three
// async functions that suspend (Task.yield) before calling the next, so
// that above the innermost one the callers exist only as async contexts
// on the heap, resumed by the executor:
//   captured inside: chainOuter -> chainMiddle -> chainInner, which calls
//     snap_capture_self(SNAP_CAPTURE_ASYNC) itself;
//   sampled from outside: spinOuter -> spinMiddle -> spinInner, which
//     spins on an atomic, or sleeps in usleep (then the walk must cross
//     libc, which keeps no frame pointer, before it reaches the async
//     frame), while this (non-task) thread samples the task's thread with
//     snap_capture_thread(SNAP_CAPTURE_ASYNC); the task runs on a task
//     executor with a thread of its own (ThreadExecutor says why not the
//     global one).
// What must hold (the oracle is the symbol table and the Swift runtime's
// demangler, SymbolOracle.swift):
//   - the frames name the three functions in order, innermost first: one
//     inside (a partial function of) the innermost function (frame 0, or
//     the first after libc's), then continuations ("resume partial
//     function for") of its two callers;
//   - every frame after the first is a resume pc: pc - 1 is exactly the
//     start of a function of this image, or (the chain's root) the task's
//     completion function in libswift_Concurrency, and the chain ends
//     there, never in the executor's machinery;
//   - stacksnap's own names for those frames are the runtime's names of
//     the symbols that hold them.
// Built with -Xfrontend -swift-async-frame-pointer=always (and on Linux
// -Xcc -fno-omit-frame-pointer: without frame pointers at -O there is no
// extended frame record to find; see docs/apple.md).
#if os(Linux)
import Glibc
import Synchronization
import stacksnap

/// A scenario's verdict: failures (none: passed) and what it saw.
struct ScenarioReport {
  var failures: [String] = []
  var log: [String] = []

  mutating func check(_ ok: Bool, _ what: @autoclosure () -> String) {
    if !ok { failures.append(what()) }
  }
}

nonisolated(unsafe) private var asyncSink = 0
/// Keeps a value alive and each call below from being a tail call.
@inline(never) func asyncKeep(_ x: Int) { asyncSink &+= x }

/// The module these functions live in, as demangled names spell it.
private let moduleName = String(String(reflecting: CaptureBuffer.self).split(separator: ".")[0])

/// pcs written by the innermost function; read after its task ended.
final class CaptureBuffer: @unchecked Sendable {
  let capacity = 64
  let pcs: UnsafeMutablePointer<UInt>
  var count = 0
  init() {
    pcs = .allocate(capacity: capacity)
    pcs.initialize(repeating: 0, count: capacity)
  }
  deinit { pcs.deallocate() }
  var frames: [UInt] { Array(UnsafeBufferPointer(start: pcs, count: max(count, 0))) }
}

final class Flag: Sendable {
  let value = Atomic<Bool>(false)
}

// ---- Captured inside --------------------------------------------------

@inline(never) func chainInner(_ out: CaptureBuffer) async -> Int {
  await Task.yield()
  let n = snap_capture_self(out.pcs, Int32(out.capacity), 0, UInt32(SNAP_CAPTURE_ASYNC))
  out.count = Int(n)
  asyncKeep(Int(n))
  return Int(n)
}

@inline(never) func chainMiddle(_ out: CaptureBuffer) async -> Int {
  await Task.yield()
  let n = await chainInner(out)
  asyncKeep(n)
  return n &+ 1
}

@inline(never) func chainOuter(_ out: CaptureBuffer) async -> Int {
  await Task.yield()
  let n = await chainMiddle(out)
  asyncKeep(n)
  return n &+ 1
}

// ---- Sampled from outside ---------------------------------------------

final class SpinState: Sendable {
  let thread = Atomic<UInt64>(0)
  let stop = Atomic<Bool>(false)
  /// Sleep in the kernel (usleep) between checks instead of spinning: the
  /// sample then lands in libc, and the walk reaches spinInner through
  /// libc's unwind tables before it switches to the async chain.
  let blocking: Bool
  init(blocking: Bool) { self.blocking = blocking }
}

/// A task executor with one thread of its own, started here with the
/// default signal mask. Why not the global executor: on Linux it runs tasks
/// on libdispatch's worker threads, and libdispatch blocks every signal
/// but SIGILL, SIGTRAP, SIGFPE, SIGBUS, SIGSEGV, SIGSYS, SIGPIPE and SIGPROF
/// on them (_dispatch_sigmask), the real-time sampling signal included:
/// snap_capture_thread cannot stop them (runSampledScenario logs it). The
/// context chain is laid out the same whichever executor runs the task.
final class ThreadExecutor: TaskExecutor, @unchecked Sendable {
  private let queue = Mutex<[UnownedJob]>([])
  private let stopping = Atomic<Bool>(false)

  init() {
    var thread = pthread_t()
    let me = Unmanaged.passRetained(self).toOpaque()
    let rc = pthread_create(
      &thread, nil,
      { arg in
        let executor = Unmanaged<ThreadExecutor>.fromOpaque(arg!).takeRetainedValue()
        executor.run()
        return nil
      }, me)
    precondition(rc == 0, "pthread_create: \(rc)")
    pthread_detach(thread)
  }

  func enqueue(_ job: consuming ExecutorJob) {
    let unowned = UnownedJob(job)
    queue.withLock { $0.append(unowned) }
  }

  /// Ends the thread once the queue is empty.
  func shutdown() { stopping.store(true, ordering: .releasing) }

  private func run() {
    while true {
      let job: UnownedJob? = queue.withLock { $0.isEmpty ? nil : $0.removeFirst() }
      if let job {
        job.runSynchronously(on: asUnownedTaskExecutor())
      } else if stopping.load(ordering: .acquiring) {
        break
      } else {
        usleep(200)  // a test's executor: polling keeps it short
      }
    }
  }
}

@inline(never) func spinInner(_ s: SpinState) async -> Int {
  await Task.yield()
  s.thread.store(snap_thread_self(), ordering: .releasing)
  var turns = 0
  while !s.stop.load(ordering: .acquiring) {
    if s.blocking { usleep(1000) }
    turns &+= 1
  }
  asyncKeep(turns)
  return turns
}

@inline(never) func spinMiddle(_ s: SpinState) async -> Int {
  await Task.yield()
  let n = await spinInner(s)
  asyncKeep(n)
  return n &+ 1
}

@inline(never) func spinOuter(_ s: SpinState) async -> Int {
  await Task.yield()
  let n = await spinMiddle(s)
  asyncKeep(n)
  return n &+ 1
}

// ---- Checks -----------------------------------------------------------

private func nowSeconds() -> Double {
  var ts = timespec()
  clock_gettime(CLOCK_MONOTONIC, &ts)
  return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

/// Polls cond every millisecond for up to `seconds` (generous: the box may
/// be loaded and the pool's threads late). Never call from a task.
private func waitUntil(seconds: Double, _ cond: () -> Bool) -> Bool {
  let deadline = nowSeconds() + seconds
  while !cond() {
    if nowSeconds() > deadline { return false }
    usleep(1000)
  }
  return true
}

/// True if `demangled` names `function` of this module, or one of its
/// partial functions ("(2) await resume partial function for M.f(...)").
private func names(_ demangled: String, _ function: String, resumeOnly: Bool) -> Bool {
  var rest = Substring(demangled)
  if let r = demangled.firstRange(of: "partial function for ") {
    if resumeOnly && !demangled[..<r.lowerBound].hasSuffix("resume ") { return false }
    rest = demangled[r.upperBound...]
  } else if resumeOnly {
    return false
  }
  return rest.hasPrefix("\(moduleName).\(function)(")
}

private func imageName(_ address: UInt) -> String {
  mappedPath(of: address) ?? "???"
}

/// Checks pcs[first...] against the chain (innermost first) and the rest
/// of the frames up to the task's root. pcs[first] is exact when first is
/// 0 and `exact0` (a sampled thread's pc), else a return address.
private func checkChain(
  _ pcs: [UInt], first: Int, exact0: Bool, chain: [String], oracle: SymbolOracle,
  label: String, into report: inout ScenarioReport
) {
  let lookups = pcs.enumerated().map { i, pc in i == 0 && exact0 ? pc : pc - 1 }
  var oracleNames = [String?](repeating: nil, count: pcs.count)
  var lines: [String] = []
  for (i, addr) in lookups.enumerated() {
    let sym = oracle.lookup(addr)
    let name = sym.flatMap { runtimeDemangle($0.mangled) }
    oracleNames[i] = name
    let where_ = sym.map { "\($0.mangled) + \(addr - $0.start)" } ?? imageName(addr)
    lines.append("  \(i) 0x\(String(pcs[i], radix: 16)) \(where_) = \(name ?? "?")")
  }
  report.log.append("\(label): \(pcs.count) frames\n" + lines.joined(separator: "\n"))

  let end = first + chain.count
  guard pcs.count > end else {
    report.check(false, "\(label): \(pcs.count) frames, expected more than \(end)")
    return
  }
  // The chain, innermost first: the first frame inside the innermost
  // function; each next one a continuation of the caller, at its start.
  for (k, function) in chain.enumerated() {
    let i = first + k
    let name = oracleNames[i] ?? "<no symbol>"
    report.check(
      names(name, function, resumeOnly: k > 0),
      "\(label): frame \(i) is \(name), expected \(k == 0 ? "in" : "a resume function of") \(function)"
    )
    if k > 0, let sym = oracle.lookup(lookups[i]) {
      report.check(
        sym.start == lookups[i],
        "\(label): frame \(i): resume pc - 1 is \(sym.mangled) + \(lookups[i] - sym.start), not its start"
      )
    }
  }
  // Beyond the chain: continuations of this image (thunks, the task's
  // closure) up to the root, the runtime's task completion; never the
  // executor's frames (they belong to the OS stack, not the async chain).
  for i in end..<pcs.count {
    if let sym = oracle.lookup(lookups[i]) {
      report.check(
        sym.start == lookups[i],
        "\(label): frame \(i): \(oracleNames[i] ?? sym.mangled) + \(lookups[i] - sym.start) is not a resume pc"
      )
    } else if i != pcs.count - 1 {
      report.check(
        false,
        "\(label): frame \(i) (\(imageName(lookups[i]))) is outside this image before the root")
    }
  }
  let root = imageName(lookups[pcs.count - 1])
  report.check(
    root.contains("swift_Concurrency"),
    "\(label): last frame is in \(root), expected the runtime's task completion (libswift_Concurrency)"
  )

  // stacksnap's names: the same symbols, demangled the same way.
  let flags = exact0 ? UInt32(SNAP_SYMBOLICATE_EXACT_PC0) : 0
  guard let stack = snap_symbolicate(pcs, Int32(pcs.count), flags) else {
    report.check(false, "\(label): snap_symbolicate returned NULL")
    return
  }
  defer { snap_stack_release(stack) }
  report.check(
    snap_stack_count(stack) == Int32(pcs.count),
    "\(label): snap_stack_count \(snap_stack_count(stack))")
  for i in first..<end {
    guard oracleNames[i] != nil, let frame = snap_stack_frame(stack, Int32(i)) else { continue }
    let ours = frame.pointee.symbol.map { String(cString: $0) } ?? "<none>"
    report.check(
      ours == (oracleNames[i] ?? "<no symbol>"),
      "\(label): frame \(i): stacksnap names it \(ours), the runtime \(oracleNames[i] ?? "<no symbol>")"
    )
    if let sym = oracle.lookup(lookups[i]) {
      report.check(
        UInt(frame.pointee.symbol_addr) == sym.start,
        "\(label): frame \(i): stacksnap's symbol_addr 0x\(String(UInt(frame.pointee.symbol_addr), radix: 16)) != nm's 0x\(String(sym.start, radix: 16))"
      )
    }
  }
}

/// chainOuter -> chainMiddle -> chainInner, captured by chainInner.
func runCapturedInsideScenario() -> ScenarioReport {
  var report = ScenarioReport()
  let oracle: SymbolOracle
  do { oracle = try SymbolOracle(inImage: #dsohandle) } catch {
    report.check(false, "symbol oracle: \(error)")
    return report
  }
  let buffer = CaptureBuffer()
  let done = Flag()
  Task.detached {
    _ = await chainOuter(buffer)
    done.value.store(true, ordering: .releasing)
  }
  guard waitUntil(seconds: 60, { done.value.load(ordering: .acquiring) }) else {
    report.check(false, "captured inside: the task did not finish in 60 s")
    return report
  }
  report.check(buffer.count > 0, "captured inside: snap_capture_self returned \(buffer.count)")
  checkChain(
    buffer.frames, first: 0, exact0: false, chain: ["chainInner", "chainMiddle", "chainOuter"],
    oracle: oracle, label: "captured inside", into: &report)
  return report
}

/// spinOuter -> spinMiddle -> spinInner, sampled from this thread while
/// spinInner spins (or sleeps in usleep, `blocked`) on the task's thread.
/// Each sample is checked from its first frame inside spinInner (in the
/// first six: frame 0 when spinning, after libc's frames when blocked, or
/// after a leaf helper at -Onone); samples with none are not counted.
func runSampledScenario(blocked: Bool, samples wanted: Int = 10) -> ScenarioReport {
  let label = blocked ? "sampled (blocked)" : "sampled (spinning)"
  var report = ScenarioReport()
  let oracle: SymbolOracle
  do { oracle = try SymbolOracle(inImage: #dsohandle) } catch {
    report.check(false, "symbol oracle: \(error)")
    return report
  }
  let state = SpinState(blocking: blocked)
  let done = Flag()
  let executor = ThreadExecutor()
  Task.detached(executorPreference: executor) {
    _ = await spinOuter(state)
    done.value.store(true, ordering: .releasing)
  }
  defer {
    state.stop.store(true, ordering: .releasing)
    if !waitUntil(seconds: 60, { done.value.load(ordering: .acquiring) }) {
      report.check(false, "\(label): the spinning task did not end in 60 s after stop")
    }
    executor.shutdown()
  }
  guard waitUntil(seconds: 60, { state.thread.load(ordering: .acquiring) != 0 }) else {
    report.check(false, "\(label): the task did not start spinning in 60 s")
    return report
  }
  let thread = state.thread.load(ordering: .acquiring)
  var buf = [UInt](repeating: 0, count: 64)
  var good = 0
  var attempts = 0
  var timeouts = 0
  let deadline = nowSeconds() + 60
  while good < wanted && attempts < 5000 && nowSeconds() < deadline {
    attempts += 1
    let n = Int(snap_capture_thread(thread, &buf, Int32(buf.count), UInt32(SNAP_CAPTURE_ASYNC)))
    if n == Int(SNAP_ETIMEDOUT) {
      timeouts += 1  // a loaded box: the signal was late; try again
      continue
    }
    guard n > 0 else {
      report.check(false, "\(label): snap_capture_thread returned \(n)")
      break
    }
    let pcs = Array(buf[0..<n])
    let demangled = (0..<n).map { i in
      oracle.lookup(i == 0 ? pcs[0] : pcs[i] - 1).flatMap { runtimeDemangle($0.mangled) } ?? ""
    }
    let inSpinner = (0..<min(n, 6)).first { names(demangled[$0], "spinInner", resumeOnly: false) }
    guard let first = inSpinner else {
      // Not in spinInner's body (yet): not counted, unless the async
      // chain is there without it: its callers' continuations with
      // spinInner's own frame (and those below it) lost.
      if let k = demangled.firstIndex(where: { names($0, "spinMiddle", resumeOnly: true) }) {
        checkChain(
          pcs, first: 0, exact0: true, chain: ["spinInner", "spinMiddle", "spinOuter"],
          oracle: oracle, label: "\(label) sample \(attempts)", into: &report)
        report.check(
          false,
          "\(label) sample \(attempts): spinMiddle's continuation is frame \(k) but no frame is in spinInner: the chain was taken at frame 0..\(k - 1), below the async function's own frame"
        )
        break
      }
      continue
    }
    good += 1
    let failuresBefore = report.failures.count
    let logBefore = report.log.count
    checkChain(
      pcs, first: first, exact0: true, chain: ["spinInner", "spinMiddle", "spinOuter"],
      oracle: oracle, label: "\(label) sample \(attempts)", into: &report)
    if good > 1 && report.failures.count == failuresBefore {
      report.log.removeSubrange(logBefore...)  // the first good sample shows them all
    }
    if report.failures.count > 20 { break }
  }
  report.log.append(
    "\(label): \(good) samples inside spinInner out of \(attempts) (\(timeouts) timed out)")
  report.check(
    good >= wanted,
    "\(label): only \(good) of \(attempts) samples found spinInner (wanted \(wanted))")
  return report
}
/// One sample of a task on the global executor, which on Linux is a
/// libdispatch worker thread: what snap_capture_thread answers there, and
/// the thread's blocked-signal mask as the kernel reports it. Asserts
/// nothing (the lead decides what the Linux backend should do about it);
/// the tests print it.
func probeGlobalExecutorThread() -> String {
  let state = SpinState(blocking: false)
  let done = Flag()
  Task.detached {
    _ = await spinOuter(state)
    done.value.store(true, ordering: .releasing)
  }
  defer {
    state.stop.store(true, ordering: .releasing)
    _ = waitUntil(seconds: 60, { done.value.load(ordering: .acquiring) })
  }
  guard waitUntil(seconds: 60, { state.thread.load(ordering: .acquiring) != 0 }) else {
    return "global executor: the task did not start in 60 s"
  }
  let thread = state.thread.load(ordering: .acquiring)
  var buf = [UInt](repeating: 0, count: 64)
  let t0 = nowSeconds()
  let n = snap_capture_thread(thread, &buf, Int32(buf.count), UInt32(SNAP_CAPTURE_ASYNC))
  let ms = Int((nowSeconds() - t0) * 1000)
  let status = (try? readFile("/proc/self/task/\(thread)/status")) ?? ""
  let sigblk = status.split(separator: "\n").first { $0.hasPrefix("SigBlk:") } ?? "SigBlk: ?"
  let what = n >= 0 ? "\(n) frames" : String(cString: snap_strerror(n))
  return
    "global executor (libdispatch worker \(thread)): snap_capture_thread -> \(n) (\(what)) after \(ms) ms; \(sigblk.replacingTabs())"
}

extension Substring {
  fileprivate func replacingTabs() -> String { String(map { $0 == "\t" ? " " : $0 }) }
}
#endif
