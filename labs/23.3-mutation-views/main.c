/* main.c: the lab 23.3 driver (make lab-23.3).
 * Runs the lab's scenarios, each versioned and functionalized, over a
 * symbolic length, and checks every result against an eager loop written
 * here that follows the semantics table (the right-hand side complete before
 * any element is stored): disjoint halves, overlapping shifts both ways, a
 * view that survives an assignment, a parameter update between two forward
 * passes, buffer reuse allowed and refused, a store the guard decides per
 * call, a host/device round trip, and four bad inputs. Exit status: 0 all
 * checks passed, 1 a check failed, 2 the runtime refused, 3 a student
 * function is not implemented yet. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mirror.h"
#include "run.h"
#include "semantics.h"
#include "uopc/driver.h"

#define N_MAX 4096
static const int64_t LENGTHS[] = {2, 8, 30, 64, 4096};   /* even: a[:h] += a[h:] has n = 2h */
#define N_LENGTHS ((int)(sizeof LENGTHS / sizeof *LENGTHS))

static int failed_checks;

static void check(int ok, const char *fmt, const char *what, long long n) {
  if (ok) return;
  failed_checks++;
  printf(fmt, what, n);
  printf("\n");
}

/* A program over one f32 storage `a` of n elements, n in [lo, 4096], or of
 * 2 * h elements, h in [1, 2048], when halves is set. */
typedef struct lab {
  mv_program *p;
  sym_dim n, h;
  const sym_expr *n_e, *h_e;
  int a;
  mv_view whole;
} lab;

static int lab_new(lab *l, int64_t lo, int halves, uopc_error *err) {
  memset(l, 0, sizeof *l);
  int rc = mv_program_new(&l->p, err);
  if (!rc) rc = sym_dim_init(&l->n, "n", lo, N_MAX, 1, err);
  if (!rc) rc = sym_dim_init(&l->h, "h", 1, N_MAX / 2, 1, err);
  if (rc) return rc;
  sym_arena *ar = mv_program_arena(l->p);
  l->h_e = sym_expr_dim(ar, &l->h);
  l->n_e = halves ? sym_expr_mul(ar, sym_expr_const(ar, 2), l->h_e) : sym_expr_dim(ar, &l->n);
  rc = mv_storage_new(l->p, "a", UOPC_F32, 1, &l->n_e, &l->a, err);
  mv_view_whole(l->p, l->a, &l->whole);
  return rc;
}

static void fill(float *x, int64_t n, int seed) {
  for (int64_t i = 0; i < n; i++) x[i] = (float)((i * 7 + seed * 13) % 23) - 11.0f;
}

/* One run of r on a copy of in (n elements), compared with want. */
static int run_one(mv_runner *r, const char *name, int64_t n, const float *in, const float *want,
                   const sym_binding *dims, uopc_error *err) {
  uopc_tensor a;
  int rc = uopc_tensor_empty(&a, UOPC_F32, 1, &n, err);
  if (rc) return rc;
  memcpy(uopc_tensor_data(&a), in, (size_t)n * sizeof *in);
  uopc_tensor *args[1] = {&a};
  rc = mv_run(r, args, 1, dims, err);
  const float *got = uopc_tensor_data(&a);
  int64_t bad = -1;
  for (int64_t i = 0; !rc && i < n && bad < 0; i++)
    if (got[i] != want[i]) bad = i;
  if (bad >= 0) {
    failed_checks++;
    printf("%s (%s): n = %lld: element %lld is %g, the semantics give %g\n", name,
           mv_runner_mode(r) == MV_FUNCTIONAL ? "functional" : "versioned", (long long)n, (long long)bad,
           (double)got[bad], (double)want[bad]);
  }
  uopc_tensor_release(&a);
  return rc;
}

/* a[:h] += a[h:] (n = 2h), and the shifts a[1:] = a[:-1] + 1 and
 * a[:-1] = a[1:] + 1: one program each, every length. */
typedef enum shape_case { HALVES, SHIFT_RIGHT, SHIFT_LEFT } shape_case;

static int build_case(lab *l, shape_case c, uopc_error *err) {
  mv_view dst, src;
  int rc;
  if (c == HALVES) {
    const sym_expr *h = l->h_e;
    rc = mv_slice_sym(l->p, &l->whole, 0, NULL, h, 1, &dst, err);
    if (!rc) rc = mv_slice_sym(l->p, &l->whole, 0, h, NULL, 1, &src, err);
  } else {
    rc = mv_slice(l->p, &l->whole, 0, c == SHIFT_RIGHT ? 1 : 0, c == SHIFT_RIGHT ? UOPC_SLICE_NONE : -1, 1, &dst, err);
    if (!rc) rc = mv_slice(l->p, &l->whole, 0, c == SHIFT_RIGHT ? 0 : 1, c == SHIFT_RIGHT ? -1 : UOPC_SLICE_NONE, 1,
                           &src, err);
  }
  ir_graph *g = rc ? NULL : mv_begin(l->p, err);
  if (!g) return rc ? rc : err->code;
  if (c == HALVES) return mv_add_(l->p, &dst, mv_load(l->p, &src), err);
  return mv_store(l->p, &dst, ir_binary(g, IR_ADD, mv_load(l->p, &src), ir_const(g, 1, UOPC_F32)), err);
}

static const char *plan_name(mv_store_plan p) {
  return p == MV_STORE_DIRECT ? "direct" : p == MV_STORE_GUARDED ? "guarded" : "staged";
}

static void eager_case(shape_case c, const float *in, float *out, int64_t n) {
  static float rhs[N_MAX];
  memcpy(out, in, (size_t)n * sizeof *in);
  if (c == HALVES) {
    for (int64_t i = 0; i < n / 2; i++) rhs[i] = in[i] + in[n / 2 + i];
    memcpy(out, rhs, (size_t)(n / 2) * sizeof *rhs);
  } else if (c == SHIFT_RIGHT) {
    for (int64_t i = 0; i + 1 < n; i++) rhs[i] = in[i] + 1;
    memcpy(out + 1, rhs, (size_t)(n - 1) * sizeof *rhs);
  } else {
    for (int64_t i = 0; i + 1 < n; i++) rhs[i] = in[i + 1] + 1;
    memcpy(out, rhs, (size_t)(n - 1) * sizeof *rhs);
  }
}

static int scenario_slices(uopc_error *err) {
  static const char *const names[] = {"a[:h] += a[h:]", "a[1:] = a[:-1] + 1", "a[:-1] = a[1:] + 1"};
  for (int c = HALVES; c <= SHIFT_LEFT; c++) {
    lab l;
    int rc = lab_new(&l, 2, c == HALVES, err);
    if (!rc) rc = build_case(&l, (shape_case)c, err);
    int64_t plans = uopc_counter_get(MV_C_PLANS), before = failed_checks;
    mv_runner *r[2] = {NULL, NULL};
    for (int m = 0; m < 2 && !rc; m++) rc = mv_runner_new(&r[m], l.p, (mv_mode)m, NULL, err);
    for (int k = 0; k < N_LENGTHS && !rc; k++) {
      static float in[N_MAX], want[N_MAX];
      fill(in, LENGTHS[k], c);
      eager_case((shape_case)c, in, want, LENGTHS[k]);
      for (int m = 0; m < 2 && !rc; m++) rc = run_one(r[m], names[c], LENGTHS[k], in, want, NULL, err);
    }
    /* One plan per statement (versioned) and one (functional), for every length. */
    check(rc || uopc_counter_get(MV_C_PLANS) - plans == 2, "%s: %lld plans built, not 2", names[c],
          (long long)(uopc_counter_get(MV_C_PLANS) - plans));
    if (!rc) printf("%-22s versioned (%s) and functional, n = 2 .. 4096: %s\n", names[c],
                    plan_name(mv_runner_store_plan(r[0], 0)), failed_checks > before ? "FAILED" : "ok");
    for (int m = 0; m < 2; m++) mv_runner_free(r[m]);
    mv_program_free(l.p);
    if (rc) return rc;
  }
  return UOPC_OK;
}

/* y = x[::2]; x[...] = v; out = y * 1: the view, made before the store and
 * read after it, sees v (x's storage at M1), both ways. */
static int scenario_view_survives(uopc_error *err) {
  lab l;
  int x, rc = lab_new(&l, 2, 0, err), v, out;
  mv_view y, xw, vw;
  if (!rc) rc = mv_storage_new(l.p, "v", UOPC_F32, 1, &l.n_e, &v, err);
  x = l.a;
  mv_view_whole(l.p, x, &xw);
  mv_view_whole(l.p, v, &vw);
  if (!rc) rc = mv_slice(l.p, &xw, 0, UOPC_SLICE_NONE, UOPC_SLICE_NONE, 2, &y, err);
  if (!rc && !mv_begin(l.p, err)) rc = err->code;
  if (!rc) rc = mv_copy_(l.p, &xw, &vw, err);
  ir_graph *g = rc ? NULL : mv_begin(l.p, err);
  if (!rc && !g) rc = err->code;
  if (!rc) rc = mv_let(l.p, "out", ir_binary(g, IR_MUL, mv_load(l.p, &y), ir_const(g, 1, UOPC_F32)), &out, err);
  for (int m = 0; m < 2 && !rc; m++) {
    mv_runner *r;
    if ((rc = mv_runner_new(&r, l.p, (mv_mode)m, NULL, err))) break;
    int64_t n = 9;
    float xs[9], vs[9];
    uopc_tensor tx, tv;
    fill(xs, n, 1), fill(vs, n, 2);
    rc = uopc_tensor_empty(&tx, UOPC_F32, 1, &n, err);
    if (!rc) rc = uopc_tensor_empty(&tv, UOPC_F32, 1, &n, err);
    if (!rc) {
      memcpy(uopc_tensor_data(&tx), xs, sizeof xs);
      memcpy(uopc_tensor_data(&tv), vs, sizeof vs);
      uopc_tensor *args[2] = {&tx, &tv};
      rc = mv_run(r, args, 2, NULL, err);
    }
    const uopc_tensor *o = rc ? NULL : mv_runner_result(r, out);
    int ok = o && o->shape[0] == 5;
    for (int i = 0; ok && i < 5; i++) ok = ((const float *)uopc_tensor_data(o))[i] == vs[2 * i];
    check(rc || ok, "y = x[::2]; x[...] = v; y (%s): y does not see v (n = %lld)", m ? "functional" : "versioned", n);
    uopc_tensor_release(&tx), uopc_tensor_release(&tv);
    mv_runner_free(r);
  }
  if (!rc) printf("%-22s versioned and functional: the view reads M1: %s\n", "y = x[::2]; x[...] = v",
                  failed_checks ? "FAILED" : "ok");
  mv_program_free(l.p);
  return rc;
}

/* f(w) = sum(x * w); w -= 0.5 * g; f(w), run on two sets of weights: each
 * run reads the weights it is given (no value captured), with no new plan
 * and no compiler run. */
static int scenario_param_update(uopc_error *err) {
  lab l;
  int rc = lab_new(&l, 1, 0, err), x, w, g_s, f0, f1;
  x = l.a;
  if (!rc) rc = mv_storage_new(l.p, "w", UOPC_F32, 1, &l.n_e, &w, err);
  if (!rc) rc = mv_storage_new(l.p, "g", UOPC_F32, 1, &l.n_e, &g_s, err);
  mv_view xv, wv, gv;
  mv_view_whole(l.p, x, &xv), mv_view_whole(l.p, w, &wv), mv_view_whole(l.p, g_s, &gv);
  for (int pass = 0; pass < 3 && !rc; pass++) {
    ir_graph *g = mv_begin(l.p, err);
    if (!g) { rc = err->code; break; }
    if (pass == 1) {
      rc = mv_store(l.p, &wv, ir_binary(g, IR_SUB, mv_load(l.p, &wv), ir_binary(g, IR_MUL, ir_const(g, 0.5, UOPC_F32),
                                                                               mv_load(l.p, &gv))), err);
      continue;
    }
    const ir_node *f = ir_reduce(g, IR_SUM, ir_binary(g, IR_MUL, mv_load(l.p, &xv), mv_load(l.p, &wv)), 1u, 0);
    rc = mv_let(l.p, pass ? "f1" : "f0", f, pass ? &f1 : &f0, err);
    if (!rc) rc = mv_escape(l.p, &(mv_view){.storage = pass ? f1 : f0}, err);
  }
  mv_runner *r = NULL;
  if (!rc) rc = mv_runner_new(&r, l.p, MV_VERSIONED, NULL, err);
  int64_t plans = uopc_counter_get(MV_C_PLANS), compiles = uopc_counter_get("compiler invocations");
  for (int round = 0; round < 2 && !rc; round++) {
    int64_t n = 4;
    float xs[4] = {1, 1, 1, 1}, ws[4] = {1, 2, 3, 4}, gs[4] = {2, 2, 2, 2};
    if (round) for (int i = 0; i < 4; i++) ws[i] *= 10;
    uopc_tensor t[3] = {0};
    for (int k = 0; k < 3 && !rc; k++) rc = uopc_tensor_empty(&t[k], UOPC_F32, 1, &n, err);
    if (!rc) {
      memcpy(uopc_tensor_data(&t[0]), xs, sizeof xs), memcpy(uopc_tensor_data(&t[1]), ws, sizeof ws);
      memcpy(uopc_tensor_data(&t[2]), gs, sizeof gs);
      uopc_tensor *args[3] = {&t[0], &t[1], &t[2]};
      rc = mv_run(r, args, 3, NULL, err);
    }
    if (!rc) {
      double a = *(const float *)uopc_tensor_data(mv_runner_result(r, f0));
      double b = *(const float *)uopc_tensor_data(mv_runner_result(r, f1));
      double want_a = round ? 100 : 10, want_b = want_a - 4;
      check(a == want_a && b == want_b, "w -= lr * g; forward(w): round %s gives the wrong forward (%lld)",
            round ? "2" : "1", (long long)(a * 1000 + b));
    }
    for (int k = 0; k < 3; k++) uopc_tensor_release(&t[k]);
  }
  check(rc || (uopc_counter_get(MV_C_PLANS) == plans && uopc_counter_get("compiler invocations") == compiles),
        "%s: new weights built a plan or ran the compiler (%lld)", "w -= lr * g", 0);
  if (!rc) printf("%-22s two weight sets, one set of plans, no compiler run: %s\n", "w -= 0.5 * g; f(w)",
                  failed_checks ? "FAILED" : "ok");
  mv_runner_free(r);
  mv_program_free(l.p);
  return rc;
}

/* t1 = a * 2; t2 = t1 + 1: t2 may write into t1's buffer. With a view of
 * t1 escaping, it may not (alias); with t1 read again later, not (live). */
static int scenario_reuse(uopc_error *err) {
  static const char *const names[] = {"reuse allowed", "reuse refused (alias)", "reuse refused (live)"};
  static const char *const counters[] = {REUSE_C_REUSED, REUSE_C_REFUSED_ALIAS, REUSE_C_REFUSED_LIVE};
  for (int c = 0; c < 3; c++) {
    lab l;
    int rc = lab_new(&l, 1, 0, err), t1, t2, t3;
    ir_graph *g = rc ? NULL : mv_begin(l.p, err);
    if (!rc && !g) rc = err->code;
    if (!rc) rc = mv_let(l.p, "t1", ir_binary(g, IR_MUL, mv_load(l.p, &l.whole), ir_const(g, 2, UOPC_F32)), &t1, err);
    mv_view v1, v2;
    mv_view_whole(l.p, t1, &v1);
    if (!rc && c == 1) rc = mv_escape(l.p, &v1, err);
    if (!rc && !(g = mv_begin(l.p, err))) rc = err->code;
    if (!rc) rc = mv_let(l.p, "t2", ir_binary(g, IR_ADD, mv_load(l.p, &v1), ir_const(g, 1, UOPC_F32)), &t2, err);
    mv_view_whole(l.p, t2, &v2);
    if (!rc && c == 2) {
      if (!(g = mv_begin(l.p, err))) rc = err->code;
      if (!rc) rc = mv_let(l.p, "t3", ir_binary(g, IR_MUL, mv_load(l.p, &v1), mv_load(l.p, &v2)), &t3, err);
      mv_view v3;
      mv_view_whole(l.p, t3, &v3);
      if (!rc) rc = mv_escape(l.p, &v3, err);
    } else if (!rc) {
      rc = mv_escape(l.p, &v2, err);
    }
    int64_t before = uopc_counter_get(counters[c]);
    mv_runner *r = NULL;
    if (!rc) rc = mv_runner_new(&r, l.p, MV_VERSIONED, NULL, err);
    int reused = !rc && mv_runner_let_buffer(r, 1) == t1;
    check(rc || (reused == (c == 0) && uopc_counter_get(counters[c]) > before), "%s: the decision is wrong (%lld)",
          names[c], (long long)reused);
    /* The values do not depend on where they were written. */
    int64_t n = 33;
    float in[33];
    fill(in, n, 4);
    uopc_tensor a = {0};
    if (!rc) rc = uopc_tensor_empty(&a, UOPC_F32, 1, &n, err);
    if (!rc) {
      memcpy(uopc_tensor_data(&a), in, sizeof in);
      uopc_tensor *args[1] = {&a};
      rc = mv_run(r, args, 1, NULL, err);
    }
    const uopc_tensor *res = rc ? NULL : mv_runner_result(r, c == 2 ? t3 : t2);
    for (int64_t i = 0; res && i < n; i++) {
      float t1v = in[i] * 2, want = c == 2 ? t1v * (t1v + 1) : t1v + 1;
      if (((const float *)uopc_tensor_data(res))[i] != want) {
        check(0, "%s: wrong value at %lld", names[c], (long long)i);
        break;
      }
    }
    if (!rc) printf("%-22s %s\n", names[c], failed_checks ? "FAILED" : "ok");
    uopc_tensor_release(&a);
    mv_runner_free(r);
    mv_program_free(l.p);
    if (rc) return rc;
  }
  return UOPC_OK;
}

/* A host write through a view, then a device read: the device copy is
 * refreshed once. A device write, then a host read: downloaded. Writes on
 * both sides: an error naming the tensor, nothing lost. */
static int scenario_mirror(uopc_error *err) {
  int64_t n = 16;
  uopc_tensor w, view;
  mirror m;
  int rc = uopc_tensor_empty(&w, UOPC_F32, 1, &n, err);
  if (!rc) rc = mirror_new(&m, "w", &w, mirror_test_device(), err);
  if (rc) { uopc_tensor_release(&w); return rc; }
  int64_t refreshed = uopc_counter_get(MIRROR_C_REFRESHED);
  rc = uopc_tensor_slice(&view, &w, 0, 0, 8, 1, err);
  if (!rc) {
    uopc_tensor_set(&view, 3, 42.0);            /* a host write through a view: the version moves */
    uopc_tensor_release(&view);
    rc = mirror_read(&m, MIRROR_DEVICE, err);
  }
  if (!rc) rc = mirror_write(&m, MIRROR_DEVICE, err);
  if (!rc) rc = mirror_read(&m, MIRROR_HOST, err);
  check(rc || uopc_counter_get(MIRROR_C_REFRESHED) - refreshed == 2, "%s: %lld stale copies refreshed, not 2",
        "mirror", (long long)(uopc_counter_get(MIRROR_C_REFRESHED) - refreshed));
  uopc_error both = {0};
  if (!rc) {
    uopc_tensor_set(&w, 0, 1.0);
    int wrc = mirror_write(&m, MIRROR_DEVICE, &both);   /* host newer: a device write would lose it */
    check(wrc == UOPC_E_ALIAS && strstr(both.message, "'w'"), "%s: writes on both sides were not refused (%lld)",
          "mirror", (long long)wrc);
  }
  if (!rc) printf("%-22s host write seen by the device, device write seen by the host, both refused: %s\n",
                  "mirror round trip", failed_checks ? "FAILED" : "ok");
  mirror_free(&m);
  uopc_tensor_release(&w);
  return rc;
}

/* Bad input: clear errors, nothing written. */
static int scenario_bad_input(uopc_error *err) {
  lab l;
  int rc = lab_new(&l, 2, 0, err);
  if (rc) return rc;
  sym_arena *ar = mv_program_arena(l.p);
  uopc_error e = {0};
  mv_view head, bcast;
  int codes[4];
  /* a[1:] = a (shapes n - 1 and n) */
  rc = mv_slice(l.p, &l.whole, 0, 1, UOPC_SLICE_NONE, 1, &head, err);
  if (!rc && !mv_begin(l.p, err)) rc = err->code;
  if (!rc) codes[0] = mv_store(l.p, &head, mv_load(l.p, &l.whole), &e);
  /* a store through a broadcast view */
  const sym_expr *shape2[2] = {sym_expr_const(ar, 3), l.n_e};
  if (!rc) rc = mv_expand(l.p, &l.whole, 2, shape2, &bcast, err);
  ir_graph *g = rc ? NULL : mv_begin(l.p, err);
  if (!rc && !g) rc = err->code;
  if (!rc) codes[1] = mv_store(l.p, &bcast, ir_const(g, 1, UOPC_F32), &e);
  /* a symbolic slice past the end: a[0:n+1] */
  mv_view past;
  if (!rc) codes[2] = mv_slice_sym(l.p, &l.whole, 0, NULL, sym_expr_add(ar, l.n_e, sym_expr_const(ar, 1)), 1, &past, &e);
  /* a run on a released tensor */
  if (!rc && !(g = mv_begin(l.p, err))) rc = err->code;
  if (!rc) rc = mv_add_(l.p, &l.whole, ir_const(g, 1, UOPC_F32), err);
  mv_runner *r = NULL;
  if (!rc) rc = mv_runner_new(&r, l.p, MV_VERSIONED, NULL, err);
  if (!rc) {
    uopc_tensor released = {0};
    uopc_tensor *args[1] = {&released};
    codes[3] = mv_run(r, args, 1, NULL, &e);
  }
  static const int want[4] = {UOPC_E_INVALID, UOPC_E_ALIAS, UOPC_E_BOUNDS, UOPC_E_INVALID};
  static const char *const what[4] = {"a[1:] = a", "a store through a.expand(3, n)", "a[0:n+1]", "a released tensor"};
  for (int k = 0; k < 4 && !rc; k++)
    check(codes[k] == want[k], "bad input, %s: not refused as it should be (%lld)", what[k], (long long)codes[k]);
  if (!rc) printf("%-22s shape mismatch, broadcast store, slice past the end, released tensor: %s\n", "bad input",
                  failed_checks ? "FAILED" : "ok");
  mv_runner_free(r);
  mv_program_free(l.p);
  return rc;
}

int main(int argc, char **argv) {
  int start = uopc_driver_start(argc, argv, "23.3",
                                "The lab's scenarios, each versioned and functionalized over a symbolic length, checked\nagainst an eager loop: slices, a view that survives, a parameter update, reuse, a mirror.");
  if (start != UOPC_DRIVER_RUN) return start;
  printf("lab 23.3: mutation and views (stores into slices and views, versioned and functionalized)\n");
  uopc_error err = {0};
  int rc = scenario_slices(&err);
  if (!rc) rc = scenario_view_survives(&err);
  if (!rc) rc = scenario_param_update(&err);
  if (!rc) rc = scenario_reuse(&err);
  if (!rc) rc = scenario_mirror(&err);
  if (!rc) rc = scenario_bad_input(&err);
  if (rc) return uopc_driver_fail("23.3", &err);
  uopc_counters_print(stdout);
  return failed_checks ? 1 : 0;
}
