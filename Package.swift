// swift-tools-version:5.5
// stacksnap for Swift Package Manager: one C target, the public headers in
// include/ (stacksnap.h is the umbrella), the portable core and the Apple
// backend from src/. Apple platforms only: SwiftPM cannot exclude sources
// per platform, and the Linux backend is excluded here.
//
// Floors: iOS 12, macOS 10.14 (cmake/darwin.cmake says why).
// Nothing extra to link: the backend finds the Objective-C runtime with
// dlsym and uses only libSystem.
import PackageDescription

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
      exclude: ["src/platform/linux"],
      sources: ["src"],
      publicHeadersPath: "include",
      cSettings: [
        .headerSearchPath("src"),
        // The symbol cache's index (uthash, header only), committed.
        .headerSearchPath("third_party/uthash"),
      ]
    )
  ],
  cLanguageStandard: .c11
)
