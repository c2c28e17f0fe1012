// swift-tools-version:5.9
// stacksnap for Swift Package Manager: one C target, the public header in
// include/ (stacksnap.h, the umbrella of the module `stacksnap`), the
// portable core and this platform's backend from src/; and a test target,
// tests/swift, run by `swift test`.
//
// Builds from the committed tree alone, no network: the library has no
// package dependencies and needs no vendored code.
//
// One backend per platform. SwiftPM cannot exclude sources per platform
// in a target, but the manifest is Swift and is evaluated on the machine
// that builds: Linux builds leave out src/platform/darwin, every other host
// (macOS, building for macOS or iOS) leaves out src/platform/linux; on
// Linux, SNAP_PACKAGE_BACKEND=darwin in the environment picks the Apple
// one for a cross build. (Cross-building Linux from a Mac is not covered.)
//
// Optional parts as CMake builds them without their extras: the GLib loop
// adapter needs SNAP_HAVE_GLIB, which only CMake defines, so here
// snap_lag_attach_glib is SNAP_EUNSUPPORTED; file:line (libdw) is
// compiled where elfutils' header exists and loaded at run time.
//
// Floors: iOS 12, macOS 10.14 (cmake/darwin.cmake says why). Nothing extra
// to link on Apple: the backend finds the Objective-C runtime with dlsym
// and uses only libSystem. No unsafe flags in the library target (a
// package that uses them cannot be depended on).
import PackageDescription

#if os(Linux)
// SNAP_PACKAGE_BACKEND=darwin: a cross build for Apple from Linux
// (`swift build --triple arm64-apple-ios12.0 --sdk ...`, which
// scripts/check-darwin.sh runs).
let otherBackend =
  Context.environment["SNAP_PACKAGE_BACKEND"] == "darwin"
  ? "src/platform/linux" : "src/platform/darwin"
#else
let otherBackend = "src/platform/linux"
#endif

// App Store builds: SNAP_NO_PRIVATE_API=1 in the environment of the build
// that evaluates this manifest (swift build, xcodebuild, Xcode started
// from a shell) leaves out the one path that names Apple's private API;
// frames are then named by dladdr alone (docs/apple.md, "App Store:
// private names"). A dependent package cannot set a dependency's defines,
// hence the environment.
let noPrivateAPI: [CSetting] =
  ["", "0"].contains(Context.environment["SNAP_NO_PRIVATE_API"] ?? "")
  ? [] : [.define("SNAP_NO_PRIVATE_API", to: "1")]

let package = Package(
  name: "stacksnap",
  platforms: [.iOS(.v12), .macOS(.v10_14)],
  products: [
    .library(name: "stacksnap", targets: ["stacksnap"])
  ],
  targets: [
    .target(
      name: "stacksnap",
      path: ".",
      exclude: [otherBackend],
      sources: ["src"],
      publicHeadersPath: "include",
      cSettings: [
        .headerSearchPath("src"),
        // The Linux backend names glibc's extensions (gettid, dladdr...).
        .define("_GNU_SOURCE", .when(platforms: [.linux])),
      ] + noPrivateAPI,
      linkerSettings: [
        .linkedLibrary("dl", .when(platforms: [.linux])),
        .linkedLibrary("pthread", .when(platforms: [.linux])),
      ]
    ),
    .testTarget(
      name: "stacksnapTests",
      dependencies: ["stacksnap"],
      path: "tests/swift",
      // main.swift and swift.cmake are the swiftc-built test_swift_async
      // (CMake), which runs the same scenarios at -O.
      exclude: ["main.swift", "swift.cmake"],
      swiftSettings: [
        // Extended frame records for every async function (the async
        // walk starts at one), and frame pointers themselves on Linux.
        .unsafeFlags([
          "-Xfrontend", "-swift-async-frame-pointer=always",
          "-Xcc", "-fno-omit-frame-pointer",
        ])
      ]
    ),
  ],
  cLanguageStandard: .c11
)
