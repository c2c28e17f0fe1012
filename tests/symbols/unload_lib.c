/*
 * unload_lib.c — built twice, as libsnap_unload_a.so with UNLOAD_NAME
 * alpha and as libsnap_unload_b.so with beta: two libraries of the same
 * layout whose one function has a different name, so that after dlclose of
 * one the other is mapped at the same address and a stale cache would name
 * its function "alpha".
 */
#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)

int CAT(UNLOAD_NAME, _function)(int x);
int CAT(UNLOAD_NAME, _function)(int x) { return x * 3 + 1; }
