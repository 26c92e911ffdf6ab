# Broken builds of lab 23.4 (see "Broken builds" in the Makefile). Each one is
# the reference with one of its rules removed (a -D flag inside a student
# region), linked with the suite that must catch it.

# The reference's student files and the lab's own (given) files.
B234_STUDENT := $(wildcard solutions/23.4-function-tracing/*.c)
B234_SRC := $(B234_STUDENT) $(filter-out %/main.c $(addprefix labs/23.4-function-tracing/,$(notdir $(B234_STUDENT))),\
  $(wildcard labs/23.4-function-tracing/*.c))
B234_DEPS := $(B234_SRC) $(wildcard labs/23.4-function-tracing/*.h) $(UOPC_LIB) $(foreach l,$(LAB_DEPS_23.4),$(call lab_lib,$(l)))
# The library with the flags in $(1); it finds the stages below it in the ordinary lib/.
b234_lib = mkdir -p $(dir $@) && $(CC) $(CFLAGS) $(LAB_BOUNDS) $(1) $(call lab_incs,23.4) -shared -o $@ $(B234_SRC) $(LDFLAGS) \
  -Wl,-rpath,'$$ORIGIN/../../lib' $(call lab_deps_links,23.4) -luopc -lm

# tp_compare_record that records no guard: the variant traced for n = 4
# (x + 1) holds for every call, so n = 20 reuses it instead of 2 x.
B234G := $(BROKEN)/23.4-no-guard
$(B234G)/liblab23_4.so: $(B234_DEPS)
	$(call say,LINK,$@) $(call b234_lib,-DTP_NO_GUARD)
$(B234G)/test_trace: tests/23.4/test_trace.c $(B234G)/liblab23_4.so
	$(call broken_test_link,23.4) -lm
BROKEN_BINS += $(B234G)/test_trace
BROKEN_EXPECT += $(B234G)/test_trace:test_shape_branch_both_outcomes_match_eager

# tp_variant_holds that reads the first guard only: a trace with two branches
# would be reused where its second one goes the other way.
B234H := $(BROKEN)/23.4-holds-first-guard-only
$(B234H)/liblab23_4.so: $(B234_DEPS)
	$(call say,LINK,$@) $(call b234_lib,-DTP_HOLDS_FIRST_GUARD_ONLY)
$(B234H)/test_trace: tests/23.4/test_trace.c $(B234H)/liblab23_4.so
	$(call broken_test_link,23.4) -lm
BROKEN_BINS += $(B234H)/test_trace
BROKEN_EXPECT += $(B234H)/test_trace:test_variant_holds_needs_every_guard

# tp_on_break that resumes in strict mode too: no error, the break is taken.
B234S := $(BROKEN)/23.4-break-ignores-strict
$(B234S)/liblab23_4.so: $(B234_DEPS)
	$(call say,LINK,$@) $(call b234_lib,-DTP_BREAK_IGNORES_STRICT)
$(B234S)/test_trace: tests/23.4/test_trace.c $(B234S)/liblab23_4.so
	$(call broken_test_link,23.4) -lm
BROKEN_BINS += $(B234S)/test_trace
BROKEN_EXPECT += $(B234S)/test_trace:test_item_in_strict_mode_names_tp_item_and_the_line

# tp_effect_check that lets an impure callback run under the tracer: it
# would run once, at trace time, and never again.
B234E := $(BROKEN)/23.4-impure-callback-allowed
$(B234E)/liblab23_4.so: $(B234_DEPS)
	$(call say,LINK,$@) $(call b234_lib,-DTP_EFFECT_ALLOWS_CALLBACKS)
$(B234E)/test_trace: tests/23.4/test_trace.c $(B234E)/liblab23_4.so
	$(call broken_test_link,23.4) -lm
BROKEN_BINS += $(B234E)/test_trace
BROKEN_EXPECT += $(B234E)/test_trace:test_impure_callback_is_rejected_and_pure_runs_at_trace_time

# tp_vjp_rule's mean without the division by the count: gradients B * 4
# times too big.
B234M := $(BROKEN)/23.4-mean-no-count
$(B234M)/liblab23_4.so: $(B234_DEPS)
	$(call say,LINK,$@) $(call b234_lib,-DTP_MEAN_NO_COUNT)
$(B234M)/test_grad: tests/23.4/test_grad.c $(B234M)/liblab23_4.so
	$(call broken_test_link,23.4) -lm
BROKEN_BINS += $(B234M)/test_grad
BROKEN_EXPECT += $(B234M)/test_grad:test_grad_mean_reads_its_count_at_run_time

# tp_unbroadcast that sums the leading axes only: a gradient for a (1, 4)
# operand keeps the (3, 4) shape.
B234U := $(BROKEN)/23.4-unbroadcast-no-stretch
$(B234U)/liblab23_4.so: $(B234_DEPS)
	$(call say,LINK,$@) $(call b234_lib,-DTP_UNBROADCAST_NO_STRETCH)
$(B234U)/test_grad: tests/23.4/test_grad.c $(B234U)/liblab23_4.so
	$(call broken_test_link,23.4) -lm
BROKEN_BINS += $(B234U)/test_grad
BROKEN_EXPECT += $(B234U)/test_grad:test_unbroadcast_sums_stretched_axes_keeping_them

# tp_accumulate that overwrites instead of adding: sum(x * x) gives x, not 2 x.
B234A := $(BROKEN)/23.4-accumulate-overwrites
$(B234A)/liblab23_4.so: $(B234_DEPS)
	$(call say,LINK,$@) $(call b234_lib,-DTP_ACCUMULATE_OVERWRITES)
$(B234A)/test_grad: tests/23.4/test_grad.c $(B234A)/liblab23_4.so
	$(call broken_test_link,23.4) -lm
BROKEN_BINS += $(B234A)/test_grad
BROKEN_EXPECT += $(B234A)/test_grad:test_accumulate_x_times_x_gives_2x
