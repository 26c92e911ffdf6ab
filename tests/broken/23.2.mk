# Broken builds of lab 23.2 (see "Broken builds" in the Makefile). Each one is
# the reference with one guard of the fast variant removed, linked with the
# suite that must catch the wrong dispatch it allows.

# The reference's student files and the lab's own (given) files.
B232_STUDENT := $(wildcard solutions/23.2-guarded-dispatch/*.c)
B232_SRC := $(B232_STUDENT) $(filter-out %/main.c $(addprefix labs/23.2-guarded-dispatch/,$(notdir $(B232_STUDENT))),\
  $(wildcard labs/23.2-guarded-dispatch/*.c))
B232_DEPS := $(B232_SRC) $(wildcard labs/23.2-guarded-dispatch/*.h) $(UOPC_LIB) $(foreach l,$(LAB_DEPS_23.2),$(call lab_lib,$(l)))

# Without the divisibility guard, n = 33 reaches the fast kernel, which has no
# tail loop: out[32] keeps its old value. The library finds the stages below it in
# the ordinary lib/ (a RUNPATH serves only its own object).
B232D := $(BROKEN)/23.2-no-divisibility-guard
$(B232D)/liblab23_2.so: $(B232_DEPS)
	@mkdir -p $(dir $@)
	$(call say,LINK,$@) $(CC) $(CFLAGS) $(LAB_BOUNDS) -DDISPATCH_NO_DIVISIBILITY_GUARD $(call lab_incs,23.2) -shared -o $@ $(B232_SRC) $(LDFLAGS) -Wl,-rpath,'$$ORIGIN/../../lib' $(call lab_deps_links,23.2) -luopc
$(B232D)/test_dispatch: tests/23.2/test_dispatch.c $(B232D)/liblab23_2.so
	$(call broken_test_link,23.2)
BROKEN_BINS += $(B232D)/test_dispatch
BROKEN_EXPECT += $(B232D)/test_dispatch:test_dispatch_length_33_matches_eager

# Without the alignment guard, a view 4 bytes past a 64-byte boundary is sent
# to the fast kernel's aligned vector loads. The test checks the decision
# before running it, so the failure is a clean test failure, not a fault.
B232A := $(BROKEN)/23.2-no-alignment-guard
$(B232A)/liblab23_2.so: $(B232_DEPS)
	@mkdir -p $(dir $@)
	$(call say,LINK,$@) $(CC) $(CFLAGS) $(LAB_BOUNDS) -DDISPATCH_NO_ALIGNMENT_GUARD $(call lab_incs,23.2) -shared -o $@ $(B232_SRC) $(LDFLAGS) -Wl,-rpath,'$$ORIGIN/../../lib' $(call lab_deps_links,23.2) -luopc
$(B232A)/test_dispatch: tests/23.2/test_dispatch.c $(B232A)/liblab23_2.so
	$(call broken_test_link,23.2)
BROKEN_BINS += $(B232A)/test_dispatch
BROKEN_EXPECT += $(B232A)/test_dispatch:test_dispatch_misaligned_view_takes_generic_path

# Without out's contiguity guard, an out of stride 2 is sent to the fast
# kernel's packed stores. The test checks the decision before it runs.
B232O := $(BROKEN)/23.2-no-out-contiguity-guard
$(B232O)/liblab23_2.so: $(B232_DEPS)
	@mkdir -p $(dir $@)
	$(call say,LINK,$@) $(CC) $(CFLAGS) $(LAB_BOUNDS) -DDISPATCH_NO_OUT_CONTIGUITY_GUARD $(call lab_incs,23.2) -shared -o $@ $(B232_SRC) $(LDFLAGS) -Wl,-rpath,'$$ORIGIN/../../lib' $(call lab_deps_links,23.2) -luopc
$(B232O)/test_dispatch: tests/23.2/test_dispatch.c $(B232O)/liblab23_2.so
	$(call broken_test_link,23.2)
BROKEN_BINS += $(B232O)/test_dispatch
BROKEN_EXPECT += $(B232O)/test_dispatch:test_dispatch_strided_out_takes_generic_path

# The variant cache (vcache_spec.c) without the guard of a constant extent:
# a length-7 call passes the guards of the variant built for length 1, whose
# code computes one element. The test checks the decision before it runs.
# This guard is in given code, which a submission never changes, so the
# grader's self-check does not replay it (BROKEN_GIVEN_EXPECT, not
# BROKEN_EXPECT); `make test` requires the failure all the same.
B232C := $(BROKEN)/23.2-no-constant-guard
$(B232C)/liblab23_2.so: $(B232_DEPS)
	@mkdir -p $(dir $@)
	$(call say,LINK,$@) $(CC) $(CFLAGS) $(LAB_BOUNDS) -DVCACHE_NO_CONSTANT_GUARD $(call lab_incs,23.2) -shared -o $@ $(B232_SRC) $(LDFLAGS) -Wl,-rpath,'$$ORIGIN/../../lib' $(call lab_deps_links,23.2) -luopc
$(B232C)/test_vcache: tests/23.2/test_vcache.c $(B232C)/liblab23_2.so
	$(call broken_test_link,23.2)
BROKEN_BINS += $(B232C)/test_vcache
BROKEN_GIVEN_EXPECT += $(B232C)/test_vcache:test_vcache_length_7_does_not_reuse_the_length_1_variant
