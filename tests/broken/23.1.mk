# Broken builds of lab 23.1 (see "Broken builds" in the Makefile).

# Lab 23.1's symbols (the stage the core builds on): the reference's student files of that
# stage and its given files.
B231_SRC := $(patsubst labs/%,solutions/%,$(filter $(addprefix labs/23.1-symbolic-dims/,$(notdir $(wildcard solutions/23.1-symbolic-dims/*.c))),$(call stage_files,sym))) \
  $(filter-out $(addprefix labs/23.1-symbolic-dims/,$(notdir $(wildcard solutions/23.1-symbolic-dims/*.c))),$(call stage_files,sym))

# Lab 23.1 with its upper bound check off by one: a binding of hi + 1 is
# accepted, so a plan would run a loop one element past the declared bound.
# The suite finds this library first (-L and $ORIGIN) and the core and the plans,
# which load the same soname, in the ordinary lib/.
B231 := $(BROKEN)/23.1-bound-off-by-one
$(B231)/liblab23_1_sym.so: $(B231_SRC) $(wildcard labs/23.1-symbolic-dims/*.h) $(UOPC_LIB)
	@mkdir -p $(dir $@)
	$(call say,LINK,$@) $(CC) $(CFLAGS) $(LAB_BOUNDS) -DSYM_DIM_BOUND_OFF_BY_ONE $(call lab_incs,sym) -shared -o $@ $(B231_SRC) $(LDFLAGS) -luopc -lm
$(B231)/test_sym_dim: tests/23.1/test_sym_dim.c $(B231)/liblab23_1_sym.so $(call lab_lib,23.1)
	$(call broken_test_link,23.1)
BROKEN_BINS += $(B231)/test_sym_dim
BROKEN_EXPECT += $(B231)/test_sym_dim:test_sym_dim_bind_rejects_value_above_hi
