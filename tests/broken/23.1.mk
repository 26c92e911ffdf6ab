# Broken builds of lab 23.1 (see "Broken builds" in the Makefile).

# The reference's student files and every given file of the lab (the compiler core too).
B231_GIVEN := $(filter-out $(addprefix labs/23.1-symbolic-dims/,$(notdir $(wildcard solutions/23.1-symbolic-dims/*.c)) main.c),\
  $(wildcard labs/23.1-symbolic-dims/*.c))
B231_SRC := $(wildcard solutions/23.1-symbolic-dims/*.c) $(B231_GIVEN)

# Lab 23.1 with its upper bound check off by one: a binding of hi + 1 is
# accepted, so a plan would run a loop one element past the declared bound.
B231 := $(BROKEN)/23.1-bound-off-by-one
$(B231)/liblab23_1.so: $(B231_SRC) $(wildcard labs/23.1-symbolic-dims/*.h) $(UOPC_LIB)
	@mkdir -p $(dir $@)
	$(call say,LINK,$@) $(CC) $(CFLAGS) $(LAB_BOUNDS) -DSYM_DIM_BOUND_OFF_BY_ONE $(call lab_incs,23.1) -shared -o $@ $(B231_SRC) $(LDFLAGS) -luopc -lm
$(B231)/test_sym_dim: tests/23.1/test_sym_dim.c $(B231)/liblab23_1.so
	$(call broken_test_link,23.1)
BROKEN_BINS += $(B231)/test_sym_dim
BROKEN_EXPECT += $(B231)/test_sym_dim:test_sym_dim_bind_rejects_value_above_hi
