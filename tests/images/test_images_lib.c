/* test_images_lib.c — a library for test_images to dlopen and dlclose. */
int snap_test_lib_function(int x);
int snap_test_lib_function(int x) { return x * 7 + 3; }
