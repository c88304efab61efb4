/*
 * `trim()`: glibc's malloc_trim(0), for src/memory.ts. glibc keeps the pages of freed C-heap
 * chunks (V8's compiler zones, parsers' buffers, OpenSSL and libuv allocations) mapped for reuse
 * and returns them only from the top of an arena; malloc_trim gives back every whole free page in
 * every arena. Node.js does not expose it. Returns true when memory was released, false when there
 * was none, and null on a C library without malloc_trim (musl).
 */
#include <node_api.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

static napi_value trim(napi_env env, napi_callback_info info) {
  (void)info;
  napi_value result;
#if defined(__GLIBC__)
  if (napi_get_boolean(env, malloc_trim(0) == 1, &result) != napi_ok) return NULL;
#else
  if (napi_get_null(env, &result) != napi_ok) return NULL;
#endif
  return result;
}

NAPI_MODULE_INIT() {
  napi_value fn;
  if (napi_create_function(env, "trim", NAPI_AUTO_LENGTH, trim, NULL, &fn) != napi_ok) return NULL;
  if (napi_set_named_property(env, exports, "trim", fn) != napi_ok) return NULL;
  return exports;
}
