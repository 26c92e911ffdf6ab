# Broken builds of lab 23.6 (see "Broken builds" in the Makefile).

# Lab 23.6 without its contiguity guard: x[::2] reaches the kernel, which reads
# adjacent physical floats instead of every second one.
B236 := $(BROKEN)/23.6-no-contiguity-guard
$(B236)/liblab23_6.so: solutions/23.6-one-kernel-many-lengths/guarded_jit.c $(UOPC_LIB)
	@mkdir -p $(dir $@)
	$(call say,LINK,$@) $(CC) $(CFLAGS) $(LAB_BOUNDS) -DGUARDED_JIT_NO_CONTIGUITY_GUARD $(call lab_incs,23.6) -shared -o $@ $< $(LDFLAGS) -luopc
$(B236)/test_guarded_jit: tests/23.6/test_guarded_jit.c $(B236)/liblab23_6.so
	$(call broken_test_link,23.6)
BROKEN_BINS += $(B236)/test_guarded_jit
BROKEN_EXPECT += $(B236)/test_guarded_jit:test_guarded_jit_strided_view_matches_eager
