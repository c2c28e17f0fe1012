/* A library installed the way the system's are (/usr/lib/...): only its
   load commands matter (tests/darwin/test_macho_ranges.c). */
int snapsmoke_system_answer(void);
int snapsmoke_system_answer(void) { return 42; }
