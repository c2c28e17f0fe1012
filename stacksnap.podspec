# stacksnap for CocoaPods: the portable core and the Apple backend, built as
# the app's own C sources. Floors: iOS 12, macOS 10.14 (cmake/darwin.cmake).
# Nothing extra to link: the backend finds the Objective-C runtime with
# dlsym and uses only libSystem.
Pod::Spec.new do |s|
  s.name         = 'stacksnap'
  s.version      = '1.3.0'
  s.summary      = 'Call stacks captured in-process, named fast, and a main-thread lag watchdog.'
  s.description  = <<~DESC
    stacksnap captures call stacks of the calling thread or of any other
    thread (suspended with thread_suspend for a few microseconds), names them
    through a cache in front of the system's symbolication, keeps only the
    app's own frames when asked, and follows Swift async contexts.
  DESC
  s.homepage     = 'https://github.com/stacksnap/stacksnap'
  s.license      = { :type => 'MIT', :file => 'LICENSE' }
  s.author       = 'stacksnap authors'
  s.source       = { :git => 'https://github.com/stacksnap/stacksnap.git', :tag => s.version.to_s }

  s.ios.deployment_target = '12.0'
  s.osx.deployment_target = '10.14'

  # One target: the core and the Apple backend (never the Linux one). No
  # two of these sources share a base name: Xcode names object files by it.
  # Public: include/stacksnap.h alone, mapped (no header_mappings_dir) to
  # <stacksnap/stacksnap.h> and the module's umbrella. src/'s headers are
  # project headers, found through HEADER_SEARCH_PATHS as "capture/walk.h".
  # scripts/check-podspec.py checks all of this with CocoaPods' own rules.
  s.source_files         = 'include/*.h', 'src/**/*.{c,h}'
  s.exclude_files        = 'src/platform/linux/**/*'
  s.public_header_files  = 'include/stacksnap.h'
  s.requires_arc         = false
  s.pod_target_xcconfig  = {
    'GCC_C_LANGUAGE_STANDARD' => 'c11',
    # src/ for the private headers.
    'HEADER_SEARCH_PATHS' => '"$(PODS_TARGET_SRCROOT)/src"',
    # The walker reads the library's own frames.
    'OTHER_CFLAGS' => '-fno-omit-frame-pointer -Wunguarded-availability',
  }
end
