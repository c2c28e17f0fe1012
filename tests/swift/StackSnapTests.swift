// StackSnapTests.swift — `swift test`: the C API through the module SwiftPM
// makes of include/ (capture, name, count), and on Linux the async
// scenarios of AsyncChain.swift as SwiftPM builds them (debug, -Onone).
import XCTest
import stacksnap

nonisolated(unsafe) private var syncSink = 0
/// Keeps each call below from being a tail call (its frame must exist).
@inline(never) private func keep(_ x: Int32) { syncSink &+= Int(x) }

@inline(never) func levelC(_ pcs: UnsafeMutablePointer<UInt>, _ max: Int32) -> Int32 {
  let n = snap_capture_self(pcs, max, 0, 0)
  keep(n)
  return n
}

@inline(never) func levelB(_ pcs: UnsafeMutablePointer<UInt>, _ max: Int32) -> Int32 {
  let n = levelC(pcs, max)
  keep(n)
  return n
}

@inline(never) func levelA(_ pcs: UnsafeMutablePointer<UInt>, _ max: Int32) -> Int32 {
  let n = levelB(pcs, max)
  keep(n)
  return n
}

final class StackSnapTests: XCTestCase {
  /// levelA -> levelB -> levelC captures: the first three frames are
  /// levelC, levelB, levelA (named by stacksnap: Swift names demangled);
  /// on Linux they are also exactly the symbols nm lists for those pcs, as
  /// the Swift runtime demangles them.
  func testCaptureAndSymbolicate() throws {
    let max: Int32 = 64
    let pcs = UnsafeMutablePointer<UInt>.allocate(capacity: Int(max))
    defer { pcs.deallocate() }
    let n = levelA(pcs, max)
    XCTAssertGreaterThanOrEqual(n, 4, "levelC, levelB, levelA and this test at least")
    guard n >= 4 else { return }
    let stack = try XCTUnwrap(snap_symbolicate(pcs, n, 0))
    defer { snap_stack_release(stack) }
    XCTAssertEqual(snap_stack_count(stack), n)
    var names: [String] = []
    for i in 0..<Int32(3) {
      let frame = try XCTUnwrap(snap_stack_frame(stack, i))
      names.append(frame.pointee.symbol.map { String(cString: $0) } ?? "<none>")
      XCTAssertNotNil(snap_stack_line(stack, i))
    }
    for (i, function) in ["levelC", "levelB", "levelA"].enumerated() {
      XCTAssertTrue(
        names[i].contains(".\(function)("), "frame \(i) is \(names[i]), expected \(function)")
    }
    // One address at a time (the call before each return address): the
    // same names, and the symbol table's with SNAP_SYMBOLICATE_MANGLED.
    var looked: [String] = []
    var mangled: [String] = []
    for i in 0..<3 {
      for flags in [UInt32(0), UInt32(SNAP_SYMBOLICATE_MANGLED)] {
        var info = snap_symbol_info_t()
        info.size = UInt32(MemoryLayout<snap_symbol_info_t>.size)
        var buf = [CChar](repeating: 0, count: 512)
        XCTAssertEqual(Int(snap_symbol_lookup(pcs[i] - 1, flags, &info, &buf, buf.count)), Int(SNAP_OK))
        let name = String(cString: buf)
        XCTAssertEqual(info.symbol_len, name.utf8.count, "frame \(i): the whole name fits")
        if flags == 0 { looked.append(name) } else { mangled.append(name) }
      }
    }
    XCTAssertEqual(looked, names)
    #if os(Linux)
    let oracle = try SymbolOracle(inImage: #dsohandle)
    for i in 0..<3 {
      let sym = oracle.lookup(pcs[i] - 1)
      XCTAssertEqual(names[i], sym.flatMap { runtimeDemangle($0.mangled) }, "frame \(i)")
      XCTAssertEqual(mangled[i], sym?.mangled, "frame \(i), mangled")
    }
    #endif
  }

  /// API v1 as Swift sees it through the module: the library's version is
  /// the header's; a size-first struct filled when its size is set and
  /// refused (SNAP_EINVAL) when not; the naming twin answers SNAP_OK with a
  /// stack for SNAP_SYMBOLICATE_EXACT_PC0 and SNAP_EINVAL for a bad flag.
  func testApiV1() throws {
    let version = String(cString: snap_version())
    XCTAssertEqual(version, "\(SNAP_VERSION_MAJOR).\(SNAP_VERSION_MINOR).\(SNAP_VERSION_PATCH)")

    let pcs = UnsafeMutablePointer<UInt>.allocate(capacity: 8)
    defer { pcs.deallocate() }
    let n = levelA(pcs, 8)
    XCTAssertGreaterThan(n, 0)
    guard n > 0 else { return }
    var info = snap_image_info_t()
    XCTAssertEqual(Int(snap_image_lookup(pcs[0], &info)), Int(SNAP_EINVAL), "size 0 is refused")
    XCTAssertNil(info.path, "nothing written for a refused size")
    info.size = UInt32(MemoryLayout<snap_image_info_t>.size)
    XCTAssertEqual(Int(snap_image_lookup(pcs[0], &info)), Int(SNAP_OK))
    XCTAssertTrue(info.start <= pcs[0] && pcs[0] < info.end, "the range holds the pc")

    var stack: OpaquePointer? = nil
    XCTAssertEqual(
      Int(snap_callstack_symbols_ex(16, UInt32(SNAP_SYMBOLICATE_EXACT_PC0), &stack)), Int(SNAP_OK))
    XCTAssertNotNil(stack)
    XCTAssertGreaterThan(snap_stack_count(stack), 0)
    snap_stack_release(stack)
    XCTAssertEqual(Int(snap_symbolicate_ex(pcs, n, 0x8000_0000, &stack)), Int(SNAP_EINVAL))
    XCTAssertNil(stack)
  }

  #if os(Linux)
  private func assertPasses(
    _ report: ScenarioReport, file: StaticString = #filePath, line: UInt = #line
  ) {
    if !report.failures.isEmpty {
      print(report.log.joined(separator: "\n"))
    }
    XCTAssertEqual(report.failures, [], file: file, line: line)
  }

  func testAsyncChainCapturedInside() {
    assertPasses(runCapturedInsideScenario())
  }

  func testAsyncChainSampledSpinning() {
    assertPasses(runSampledScenario(blocked: false))
  }

  func testAsyncChainSampledBlocked() {
    assertPasses(runSampledScenario(blocked: true))
    print("note: \(probeGlobalExecutorThread())")
  }
  #endif
}
