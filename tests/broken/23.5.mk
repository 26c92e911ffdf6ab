# Broken builds of lab 23.5 (see "Broken builds" in the Makefile). Each one is
# the reference with one check of a student function removed, linked with the
# suite that must catch it. The suites use <math.h>: -lm after the link.

# The reference's student files and the lab's own (given) files.
B235_STUDENT := $(wildcard solutions/23.5-kv-cache/*.c)
B235_SRC := $(B235_STUDENT) $(filter-out %/main.c $(addprefix labs/23.5-kv-cache/,$(notdir $(B235_STUDENT))),\
  $(wildcard labs/23.5-kv-cache/*.c))
B235_DEPS := $(B235_SRC) $(wildcard labs/23.5-kv-cache/*.h) $(UOPC_LIB) $(foreach l,$(LAB_DEPS_23.5),$(call lab_lib,$(l)))

# kv_row_prefix returns every slot of the row, not the populated prefix: the
# attention reads the capacity's empty slots without a mask, so the view's
# shape is wrong and the decoded logits differ from the uncached reference.
B235P := $(BROKEN)/23.5-prefix-whole-capacity
$(B235P)/liblab23_5.so: $(B235_DEPS)
	@mkdir -p $(dir $@)
	$(call say,LINK,$@) $(CC) $(CFLAGS) $(LAB_BOUNDS) -DKV_PREFIX_WHOLE_CAPACITY $(call lab_incs,23.5) -shared -o $@ $(B235_SRC) $(LDFLAGS) -Wl,-rpath,'$$ORIGIN/../../lib' $(call lab_deps_links,23.5) -luopc -lm
$(B235P)/test_kv: tests/23.5/test_kv.c $(B235P)/liblab23_5.so
	$(call broken_test_link,23.5) -lm
$(B235P)/test_decode: tests/23.5/test_decode.c $(B235P)/liblab23_5.so
	$(call broken_test_link,23.5) -lm
BROKEN_BINS += $(B235P)/test_kv $(B235P)/test_decode
BROKEN_EXPECT += $(B235P)/test_kv:test_kv_row_prefix_views_the_populated_slots
BROKEN_EXPECT += $(B235P)/test_decode:test_decode_cached_logits_match_the_uncached_reference_at_every_step

# kv_append writes slot p + 1 instead of p. (test_kv never appends into the
# last slot of the last row, so the build fails a comparison, never writes
# past the layer.)
B235A := $(BROKEN)/23.5-append-slot-plus-one
$(B235A)/liblab23_5.so: $(B235_DEPS)
	@mkdir -p $(dir $@)
	$(call say,LINK,$@) $(CC) $(CFLAGS) $(LAB_BOUNDS) -DKV_APPEND_SLOT_PLUS_ONE $(call lab_incs,23.5) -shared -o $@ $(B235_SRC) $(LDFLAGS) -Wl,-rpath,'$$ORIGIN/../../lib' $(call lab_deps_links,23.5) -luopc -lm
$(B235A)/test_kv: tests/23.5/test_kv.c $(B235A)/liblab23_5.so
	$(call broken_test_link,23.5) -lm
BROKEN_BINS += $(B235A)/test_kv
BROKEN_EXPECT += $(B235A)/test_kv:test_kv_append_writes_slot_length_of_row_b_only

# The softmax without the maximum subtracted first: scores near 250 overflow
# expf, and inf / inf is NaN.
B235S := $(BROKEN)/23.5-softmax-without-max
$(B235S)/liblab23_5.so: $(B235_DEPS)
	@mkdir -p $(dir $@)
	$(call say,LINK,$@) $(CC) $(CFLAGS) $(LAB_BOUNDS) -DATTN_SOFTMAX_NO_MAX $(call lab_incs,23.5) -shared -o $@ $(B235_SRC) $(LDFLAGS) -Wl,-rpath,'$$ORIGIN/../../lib' $(call lab_deps_links,23.5) -luopc -lm
$(B235S)/test_attn: tests/23.5/test_attn.c $(B235S)/liblab23_5.so
	$(call broken_test_link,23.5) -lm
BROKEN_BINS += $(B235S)/test_attn
BROKEN_EXPECT += $(B235S)/test_attn:test_attn_build_subtracts_the_maximum_before_exp
