# Broken builds of lab 23.3 (see "Broken builds" in the Makefile). Each one is
# the reference with one proof or check of a student function removed, linked
# with the suite that must catch the wrong answer it allows.

# The reference's student files and the lab's own (given) files.
B233_STUDENT := $(wildcard solutions/23.3-mutation-views/*.c)
B233_SRC := $(B233_STUDENT) $(filter-out %/main.c $(addprefix labs/23.3-mutation-views/,$(notdir $(B233_STUDENT))),\
  $(wildcard labs/23.3-mutation-views/*.c))
B233_DEPS := $(B233_SRC) $(wildcard labs/23.3-mutation-views/*.h) $(UOPC_LIB) $(foreach l,$(LAB_DEPS_23.3),$(call lab_lib,$(l)))
b233_lib = $(CC) $(CFLAGS) $(LAB_BOUNDS) $(1) $(call lab_incs,23.3) -shared -o $@ $(B233_SRC) $(LDFLAGS) \
  -Wl,-rpath,'$$ORIGIN/../../lib' $(call lab_deps_links,23.3) -luopc

# alias_decide without the residue proof: two progressions whose offsets
# differ are called disjoint, so a[1:] and a[:-1] with n >= 3 (which share
# a[1]) would be stored in place without a guard.
B233R := $(BROKEN)/23.3-no-residue-check
$(B233R)/liblab23_3.so: $(B233_DEPS)
	@mkdir -p $(dir $@)
	$(call say,LINK,$@) $(call b233_lib,-DALIAS_NO_RESIDUE_CHECK)
$(B233R)/test_alias: tests/23.3/test_alias.c $(B233R)/liblab23_3.so
	$(call broken_test_link,23.3)
BROKEN_BINS += $(B233R)/test_alias
BROKEN_EXPECT += $(B233R)/test_alias:test_alias_shifted_slices_overlap_when_n_is_at_least_3

# alias_guard_disjoint with the byte ranges for 1-D views too: a[0::2] and
# a[1::2] interleave, so the call's guard says "overlap" and stages a store
# that could have been written in place. Conservative, but not exact.
B233G := $(BROKEN)/23.3-guard-ranges-only
$(B233G)/liblab23_3.so: $(B233_DEPS)
	@mkdir -p $(dir $@)
	$(call say,LINK,$@) $(call b233_lib,-DALIAS_GUARD_RANGES_ONLY)
$(B233G)/test_alias: tests/23.3/test_alias.c $(B233G)/liblab23_3.so
	$(call broken_test_link,23.3)
BROKEN_BINS += $(B233G)/test_alias
BROKEN_EXPECT += $(B233G)/test_alias:test_alias_guard_disjoint_matches_brute_force_on_every_small_1d_view

# reuse_decide with the alias proof only: t1 is written over by t2 = t1 + 1
# although t3 = t1 * t2 reads t1 afterwards, and gets t2's values instead.
B233L := $(BROKEN)/23.3-no-liveness
$(B233L)/liblab23_3.so: $(B233_DEPS)
	@mkdir -p $(dir $@)
	$(call say,LINK,$@) $(call b233_lib,-DREUSE_NO_LIVENESS)
$(B233L)/test_program: tests/23.3/test_program.c $(B233L)/liblab23_3.so
	$(call broken_test_link,23.3)
BROKEN_BINS += $(B233L)/test_program
BROKEN_EXPECT += $(B233L)/test_program:test_reuse_decide_refuses_a_buffer_read_later

# mv_store without the collision check: a store into a broadcast view (a
# stride-0 axis of 4 elements) is accepted, and four values race for one.
B233C := $(BROKEN)/23.3-no-collision-check
$(B233C)/liblab23_3.so: $(B233_DEPS)
	@mkdir -p $(dir $@)
	$(call say,LINK,$@) $(call b233_lib,-DMV_STORE_NO_COLLISION_CHECK)
$(B233C)/test_program: tests/23.3/test_program.c $(B233C)/liblab23_3.so
	$(call broken_test_link,23.3)
BROKEN_BINS += $(B233C)/test_program
BROKEN_EXPECT += $(B233C)/test_program:test_mv_store_rejects_and_leaves_the_program_unchanged
