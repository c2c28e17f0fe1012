/* A library as an app embeds it (install name @rpath/...): the smoke
   executable calls it, so a capture from here crosses two app images. */
int snapsmoke_embedded_call(int (*fn)(void *), void *arg);
int snapsmoke_embedded_call(int (*fn)(void *), void *arg) { return fn(arg); }
