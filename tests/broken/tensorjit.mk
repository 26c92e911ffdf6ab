# tensorjit's suite against the broken builds of the stages it stands on
# (see "Broken builds" in the Makefile): a guard removed below it must make
# one of its contract's cases fail. Both guards are in code tensorjit reuses
# rather than repeats, which is the point of one cache and one tracer.

# The variant cache without the guard of a constant extent (B232C's library):
# the artifact built for n = 1 then holds for n = 0; the case asks which
# artifact would run before each call, so it fails before a kernel reads.
# The library is given code (BROKEN_GIVEN_EXPECT). libtensorjit is linked
# again beside the broken cache, its $ORIGIN first (which finds that one) and
# then the ordinary lib/ (the stages below it): the suite itself needs no
# symbol of 23.2, so only tensorjit's own search can reach the broken cache.
BTJC := $(BROKEN)/tensorjit-no-constant-guard
BTJ_OBJS := $(patsubst %.c,$(BUILD)/obj/%.o,$(call lab_src,tj))
$(BTJC)/liblab23_2.so: $(B232C)/liblab23_2.so
	@mkdir -p $(dir $@)
	$(call say,CP,$@) cp $< $@
$(BTJC)/libtensorjit.so: $(BTJ_OBJS) $(BTJC)/liblab23_2.so
	$(call say,LINK,$@) $(CC) -shared $(LDFLAGS) -Wl,-rpath,'$$ORIGIN/../../lib' -o $@ $(BTJ_OBJS) $(call lab_deps_links,tj) -luopc -lm
$(BTJC)/test_tensorjit: tests/tensorjit/test_tensorjit.c $(BTJC)/liblab23_2.so $(BTJC)/libtensorjit.so
	$(call broken_test_link,tj) -lm
BROKEN_BINS += $(if $(TJ_DIR),$(BTJC)/test_tensorjit)
BROKEN_GIVEN_EXPECT += $(if $(TJ_DIR),$(BTJC)/test_tensorjit:test_tj_sizes_0_and_1_are_specialised)

# 23.4's tp_compare_record recording no guard (B234G's library, which the
# suite links itself): the artifact traced for n = 3 (2x) serves n = 7. The
# guard is a student's, but the grader's self-check replays the labs' own
# suites only (harness/grading/selfcheck.py), so it is listed with the given ones.
BTJG := $(BROKEN)/tensorjit-no-trace-guard
$(BTJG)/liblab23_4.so: $(B234G)/liblab23_4.so
	@mkdir -p $(dir $@)
	$(call say,CP,$@) cp $< $@
$(BTJG)/test_tensorjit: tests/tensorjit/test_tensorjit.c $(BTJG)/liblab23_4.so $(call lab_lib,tj)
	$(call broken_test_link,tj) -lm
BROKEN_BINS += $(if $(TJ_DIR),$(BTJG)/test_tensorjit)
BROKEN_GIVEN_EXPECT += $(if $(TJ_DIR),$(BTJG)/test_tensorjit:test_tj_branch_on_size_guards_both_outcomes)

# tp_callout.c (given code of 23.4's tracer) without the guards of concrete
# metadata: the artifact traced for length 4, its call-out declared (4),
# then serves length 5, where the call-out returns (5): the check after it
# runs refuses the call, and the case counting one artifact per length fails.
BTJO := $(BROKEN)/tensorjit-callout-no-input-guard
$(BTJO)/liblab23_4.so: $(B234_DEPS)
	$(call say,LINK,$@) $(call b234_lib,-DTP_CALLOUT_NO_INPUT_GUARD)
$(BTJO)/test_callout: tests/tensorjit/test_callout.c $(BTJO)/liblab23_4.so $(call lab_lib,tj)
	$(call broken_test_link,tj) -lm
BROKEN_BINS += $(if $(TJ_DIR),$(BTJO)/test_callout)
BROKEN_GIVEN_EXPECT += $(if $(TJ_DIR),$(BTJO)/test_callout:test_tj_callout_with_concrete_metadata_specialises_per_size)
