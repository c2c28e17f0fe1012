// main.swift — test_swift_async: the async scenarios of AsyncChain.swift as
// one executable for ctest, built by swiftc at -O (tests/swift/swift.cmake).
// `swift test` runs the same scenarios at -Onone (StackSnapTests.swift);
// SwiftPM leaves this file out of its test target.
#if os(Linux)
import Glibc

var failed = 0
for (name, run) in [
  ("captured inside", { runCapturedInsideScenario() }),
  ("sampled from outside, spinning", { runSampledScenario(blocked: false) }),
  ("sampled from outside, blocked", { runSampledScenario(blocked: true) }),
] as [(String, () -> ScenarioReport)] {
  let report = run()
  for line in report.log { print(line) }
  for failure in report.failures { print("FAIL: \(failure)") }
  print("\(name): \(report.failures.isEmpty ? "ok" : "FAILED")")
  if !report.failures.isEmpty { failed += 1 }
}
print("note: \(probeGlobalExecutorThread())")
print(failed == 0 ? "test_swift_async: passed" : "test_swift_async: \(failed) scenario(s) failed")
exit(failed == 0 ? 0 : 1)
#endif
