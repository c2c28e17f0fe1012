/*
 * test_publish_order.c — the image table never goes back in time (issue
 * 26, goal 7: a pc of a library that stayed loaded named as in no image,
 * 1-2 in millions, while other threads loaded and unloaded libraries).
 *
 * Two builds of the table run at once: a helper's, which enumerates the
 * images before libsnap_churn_a.so is loaded and is then held (the
 * images.c test hook, between enumerating and publishing), and the main
 * thread's, which loads the library, refreshes (its build sees the library)
 * and publishes. The helper then publishes. Before the fix it put its
 * older table back, with its older stamp; a thread that had just found the
 * stamp current (as the main thread does here, in refresh_if_stale)
 * acquired that table and named the library's pcs as in no image. The
 * oracle is dlsym's address of a function of the library, and glibc's
 * dladdr for it: the table must hold it.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>

#include "check.h"
#include "images/images.h"
#include "stacksnap.h"

static pthread_t g_helper;
static atomic_int g_state; /* 0; 1: the helper enumerated; 2: may publish */

static void hold_helper(void) {
  if (!pthread_equal(pthread_self(), g_helper))
    return;
  atomic_store(&g_state, 1);
  while (atomic_load(&g_state) != 2)
    sched_yield();
}

static void *helper(void *arg) {
  (void)arg;
  (void)snap__images_refresh(true); /* enumerates now, publishes later */
  return NULL;
}

int main(void) {
  (void)snap__images_refresh(true);
  snap__images_set_publish_hook(hold_helper);
  CHECK_EQ(pthread_create(&g_helper, NULL, helper, NULL), 0);
  while (atomic_load(&g_state) != 1)
    sched_yield();

  void *h = dlopen(LIB_A, RTLD_NOW | RTLD_LOCAL);
  CHECK(h != NULL, "dlopen %s: %s", LIB_A, dlerror());
  uintptr_t fn = h ? (uintptr_t)dlsym(h, "churn_a_f0") : 0;
  Dl_info info;
  CHECK(fn && dladdr((void *)fn, &info) && info.dli_fname,
        "the loader does not know churn_a_f0");
  CHECK_EQ(snap__images_refresh_if_stale(), SNAP_OK);

  atomic_store(&g_state, 2); /* the helper publishes (or must not) */
  pthread_join(g_helper, NULL);
  snap__images_set_publish_hook(NULL);

  /* As a naming does after refresh_if_stale found the stamp current. */
  const snap__images_t *t = snap__images_acquire();
  const snap__image_t *img = snap__images_find(t, fn + 4);
  CHECK(img != NULL,
        "churn_a_f0 (loaded, in %s) is in no image of the published table: "
        "an older table was published over a newer one",
        info.dli_fname);
  snap__images_release(t);

  /* And through the public path, for good measure. */
  uintptr_t pcs[1] = {fn + 5};
  const snap_stack_t *s = snap_symbolicate(pcs, 1, 0);
  const snap_frame_t *f = snap_stack_frame(s, 0);
  CHECK(f && f->symbol && f->image_path, "churn_a_f0 named as %s in %s",
        f && f->symbol ? f->symbol : "(null)",
        f && f->image_path ? f->image_path : "(no image)");
  snap_stack_release(s);
  if (h)
    dlclose(h);
  return check_result("test_publish_order");
}
