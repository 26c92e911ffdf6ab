# Broken builds of lab 23.7 (see "Broken builds" in the Makefile). Lab 23.7's
# files are tensorjit's (the stage tj), so each broken build is libtensorjit.so:
# tensorjit's objects as built, but for the one student file that holds the
# decision, compiled again with the macro that removes it; the suite that
# must catch it links that library first ($ORIGIN). The stages below are the
# ordinary ones (LAB_DEPS_tj). The grader's self-check replays each entry
# with the macro defined atop the student files (harness/grading/selfcheck.py),
# so each build names one case; the others its suite fails are in its comment.

B237_SRC := $(call lab_src,23.7)
B237_OBJS := $(patsubst %.c,$(BUILD)/obj/%.o,$(B237_SRC))
B237_HEADERS := $(wildcard labs/tensorjit/*.h)
B237_DEPS := $(B237_HEADERS) $(UOPC_LIB) $(foreach l,$(LAB_DEPS_tj),$(call lab_lib,$(l)))
B237_SIZES := $(filter %/tj_sizes.c,$(B237_SRC)) $(filter-out %/tj_sizes.o,$(B237_OBJS)) $(B237_DEPS)
B237_SERVE := $(filter %/tj_serve.c,$(B237_SRC)) $(filter-out %/tj_serve.o,$(B237_OBJS)) $(B237_DEPS)
B237_FUSE := $(filter %/tj_fuse.c,$(B237_SRC)) $(filter-out %/tj_fuse.o,$(B237_OBJS)) $(B237_DEPS)
# $(1) the -D flag: the student file (the rule's first prerequisite) compiled with it, linked with the rest
b237_lib = mkdir -p $(dir $@) && $(CC) $(CFLAGS) $(LAB_BOUNDS) $(1) $(call lab_incs,23.7) -shared -o $@ $< \
  $(filter %.o,$^) $(LDFLAGS) -Wl,-rpath,'$$ORIGIN/../../lib' $(call lab_deps_links,tj) -luopc -lm
B237_FIXTURE := tests/23.7/tj_fixture.h

# Sizes 0 and 1 become dims like any other (from 0): the artifact built for
# n = 3 serves n = 1 and 0. test_sizes also fails the cases of dims' bounds
# and test_tj_call_affine_over_sizes_0_and_1_builds_three_artifacts.
B237P := $(BROKEN)/23.7-no-01-pin
$(B237P)/libtensorjit.so: $(B237_SIZES)
	$(call say,LINK,$@) $(call b237_lib,-DTJ_NO_01_PIN)
$(B237P)/test_sizes: tests/23.7/test_sizes.c $(B237_FIXTURE) $(B237P)/libtensorjit.so
	$(call broken_test_link,23.7) -lm
BROKEN_BINS += $(B237P)/test_sizes
BROKEN_EXPECT += $(B237P)/test_sizes:test_tj_extent_of_makes_sizes_0_and_1_constants_under_specialize_01

# Duck sizing: two axes of one size share a dim, so the artifact of (3, 3)
# needs its axes equal and (3, 5) builds another (test_sizes also fails
# test_tj_call_square_matrix_artifact_serves_a_rectangle).
B237D := $(BROKEN)/23.7-duck-sizing
$(B237D)/libtensorjit.so: $(B237_SIZES)
	$(call say,LINK,$@) $(call b237_lib,-DTJ_DUCK_SIZING)
$(B237D)/test_sizes: tests/23.7/test_sizes.c $(B237_FIXTURE) $(B237D)/libtensorjit.so
	$(call broken_test_link,23.7) -lm
BROKEN_BINS += $(B237D)/test_sizes
BROKEN_EXPECT += $(B237D)/test_sizes:test_tj_extent_of_never_shares_a_dim_because_sizes_are_equal

# d > k taken as d >= k: len(x) > 4 bounds x_0 to [4, ...], so n = 4 would
# run the x+1 artifact where the model takes 2x (every narrowing case of
# test_sizes fails).
B237S := $(BROKEN)/23.7-strict-as-loose
$(B237S)/libtensorjit.so: $(B237_SIZES)
	$(call say,LINK,$@) $(call b237_lib,-DTJ_STRICT_AS_LOOSE)
$(B237S)/test_sizes: tests/23.7/test_sizes.c $(B237_FIXTURE) $(B237S)/libtensorjit.so
	$(call broken_test_link,23.7) -lm
BROKEN_BINS += $(B237S)/test_sizes
BROKEN_EXPECT += $(B237S)/test_sizes:test_tj_sizes_narrow_bounds_each_true_comparison

# A pinned class joined to an unpinned one, as its child, forgets the pin.
B237U := $(BROKEN)/23.7-unify-drops-pin
$(B237U)/libtensorjit.so: $(B237_SIZES)
	$(call say,LINK,$@) $(call b237_lib,-DTJ_UNIFY_DROPS_PIN)
$(B237U)/test_sizes: tests/23.7/test_sizes.c $(B237_FIXTURE) $(B237U)/libtensorjit.so
	$(call broken_test_link,23.7) -lm
BROKEN_BINS += $(B237U)/test_sizes
BROKEN_EXPECT += $(B237U)/test_sizes:test_tj_sizes_unify_keeps_a_pinned_class_pinned_when_joined

# The trace's comparisons never checked: x[len(y)] with len(y) past len(x)
# runs the artifact. test_serve's x lies inside a longer storage, so the
# read is of a wrong element, never past memory; it also fails
# test_tj_trace_holds_names_the_first_guard_that_fails_and_its_value and the
# explain case.
B237T := $(BROKEN)/23.7-trace-unchecked
$(B237T)/libtensorjit.so: $(B237_SERVE)
	$(call say,LINK,$@) $(call b237_lib,-DTJ_TRACE_UNCHECKED)
$(B237T)/test_serve: tests/23.7/test_serve.c $(B237_FIXTURE) $(B237T)/libtensorjit.so
	$(call broken_test_link,23.7) -lm
BROKEN_BINS += $(B237T)/test_serve
BROKEN_EXPECT += $(B237T)/test_serve:test_tj_call_index_by_a_size_is_checked_on_every_call

# A view starts where its input starts: x[1:len(x)-1] reads x[0 .. n-3]
# (test_serve also fails both direct cases of tj_view_make's offset).
B237V := $(BROKEN)/23.7-view-no-offset
$(B237V)/libtensorjit.so: $(B237_SERVE)
	$(call say,LINK,$@) $(call b237_lib,-DTJ_VIEW_NO_OFFSET)
$(B237V)/test_serve: tests/23.7/test_serve.c $(B237_FIXTURE) $(B237V)/libtensorjit.so
	$(call broken_test_link,23.7) -lm
BROKEN_BINS += $(B237V)/test_serve
BROKEN_EXPECT += $(B237V)/test_serve:test_tj_call_slice_of_an_input_is_a_view_of_its_storage

# What a reduction reads is not counted: softmax's exp(x - max) looks read
# once (by the divide) and is fused into the sum's nest and the divide's,
# computed twice an element (test_fuse also fails the fan-out cases, whose
# sum reads the exp, and the lowered softmax's groups and exp count).
B237F := $(BROKEN)/23.7-fuse-past-reduction
$(B237F)/libtensorjit.so: $(B237_FUSE)
	$(call say,LINK,$@) $(call b237_lib,-DTJ_FUSE_PAST_REDUCTION)
$(B237F)/test_fuse: tests/23.7/test_fuse.c $(B237_FIXTURE) $(B237F)/libtensorjit.so
	$(call broken_test_link,23.7) -lm
BROKEN_BINS += $(B237F)/test_fuse
BROKEN_EXPECT += $(B237F)/test_fuse:test_tj_fuse_rule_counts_what_a_reduction_reads
