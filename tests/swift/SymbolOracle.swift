// SymbolOracle.swift — outside witnesses for the Swift tests: the symbol
// table of the image that holds this code, as binutils' `nm` prints it
// (function start and size), and names demangled by the Swift runtime's own
// demangler (`swift_demangle` in libswiftCore).
//
// Neither uses stacksnap: the tests compare what stacksnap captured and
// named with what the compiler wrote into the symbol table and what the
// runtime says the symbol means.
//
// Linux only: `nm -S` (sizes) and /proc/self/maps (which file holds an
// address) are how an ELF image is read here; Apple's nm prints no sizes.
#if os(Linux)
import Glibc

/// One defined symbol: [start, start + size) at its loaded address.
struct OracleSymbol {
  let start: UInt
  let size: UInt
  let mangled: String

  func contains(_ address: UInt) -> Bool {
    address >= start && address - start < size
  }
}

/// The defined, sized symbols of one loaded image, sorted by address.
struct SymbolOracle {
  let path: String
  let symbols: [OracleSymbol]

  /// The image that holds `inImage` (pass `#dsohandle`: the image's own
  /// __dso_handle, which its symbol table lists, gives the load bias).
  init(inImage: UnsafeRawPointer) throws {
    guard let file = mappedPath(of: UInt(bitPattern: inImage)) else {
      throw OracleError("no mapped file holds \(inImage)")
    }
    path = file
    let listing = try runCommand("nm -S --defined-only '\(path)'")
    var raw: [(UInt, UInt, String)] = []
    var dsoHandle: UInt?
    for line in listing.split(separator: "\n") {
      let f = line.split(separator: " ", omittingEmptySubsequences: true)
      // "address size type name" (symbols with a size), or
      // "address type name".
      if f.count == 3 && f[2] == "__dso_handle" {
        dsoHandle = UInt(f[0], radix: 16)
      }
      guard f.count == 4, let addr = UInt(f[0], radix: 16),
        let size = UInt(f[1], radix: 16)
      else { continue }
      if f[3] == "__dso_handle" { dsoHandle = addr }
      if size > 0 { raw.append((addr, size, String(f[3]))) }
    }
    guard let linked = dsoHandle else {
      throw OracleError("nm lists no __dso_handle in \(path)")
    }
    let bias = UInt(bitPattern: inImage) &- linked
    symbols = raw.map { OracleSymbol(start: $0.0 &+ bias, size: $0.1, mangled: $0.2) }
      .sorted { $0.start < $1.start }
  }

  /// The symbol whose [start, start + size) holds address, if any.
  func lookup(_ address: UInt) -> OracleSymbol? {
    var lo = 0
    var hi = symbols.count
    while lo < hi {  // first symbol starting after address
      let mid = (lo + hi) / 2
      if symbols[mid].start <= address { lo = mid + 1 } else { hi = mid }
    }
    var i = lo - 1
    while i >= 0 {  // symbols may nest (aliases): take the innermost fit
      if symbols[i].contains(address) { return symbols[i] }
      if address - symbols[i].start > 1 << 20 { break }
      i -= 1
    }
    return nil
  }
}

struct OracleError: Error, CustomStringConvertible {
  let description: String
  init(_ d: String) { description = d }
}

/// The Swift runtime's demangler, found in the process (libswiftCore is
/// loaded in every Swift program).
func runtimeDemangle(_ mangled: String) -> String? {
  typealias DemangleFn =
    @convention(c) (
      UnsafePointer<CChar>?, Int, UnsafeMutablePointer<CChar>?,
      UnsafeMutablePointer<Int>?, UInt32
    ) -> UnsafeMutablePointer<CChar>?
  // RTLD_DEFAULT is ((void *)0) in glibc.
  guard let sym = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "swift_demangle")
  else { return nil }
  let demangle = unsafeBitCast(sym, to: DemangleFn.self)
  return mangled.withCString { c -> String? in
    guard let out = demangle(c, strlen(c), nil, nil, 0) else { return nil }
    defer { free(out) }
    return String(cString: out)
  }
}

/// The file mapped at address, as the kernel lists it in /proc/self/maps.
func mappedPath(of address: UInt) -> String? {
  guard let maps = try? readFile("/proc/self/maps") else { return nil }
  for line in maps.split(separator: "\n") {
    // "start-end perms offset dev inode [path]"
    let f = line.split(separator: " ", maxSplits: 5, omittingEmptySubsequences: true)
    let range = f[0].split(separator: "-")
    guard f.count == 6, range.count == 2, let lo = UInt(range[0], radix: 16),
      let hi = UInt(range[1], radix: 16), address >= lo, address < hi
    else { continue }
    return String(f[5].drop { $0 == " " })
  }
  return nil
}

private func readAll(_ stream: UnsafeMutablePointer<FILE>) -> String {
  var out = [UInt8]()
  var buf = [UInt8](repeating: 0, count: 65536)
  while true {
    let got = fread(&buf, 1, buf.count, stream)
    if got == 0 { break }
    out.append(contentsOf: buf[0..<got])
  }
  return String(decoding: out, as: UTF8.self)
}

func readFile(_ path: String) throws -> String {
  guard let f = fopen(path, "r") else { throw OracleError("cannot open \(path)") }
  defer { fclose(f) }
  return readAll(f)
}

/// stdout of a shell command; throws on a non-zero exit.
func runCommand(_ command: String) throws -> String {
  guard let pipe = popen(command, "r") else {
    throw OracleError("popen failed: \(command)")
  }
  let out = readAll(pipe)
  let status = pclose(pipe)
  guard status == 0 else { throw OracleError("\(command): exit status \(status)") }
  return out
}
#endif
