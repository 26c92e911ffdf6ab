# grade.mk: the grader's additions to the project Makefile, read after it
# (make -f Makefile -f harness/grading/grade.mk; see harness/grading/workspace.py).
#
# In the grader's own tree (no student code): the grade hook library, and the held-out suites
# compiled to objects without debug information, so that neither their source nor its lines
# enter a scratch copy.
GRADE_DIR := $(BUILD)/grade

$(GRADE_DIR)/libgradehook.so: harness/grading/grade_hook.c harness/grading/grade.mk
	@mkdir -p $(dir $@)
	$(call say,LINK,$@) $(CC) -std=c11 -O2 -Wall -Wextra -Werror -fPIC -shared \
	  -Wl,-z,initfirst -o $@ $< -ldl

# build/labs/grade/hidden/23.1/test_x.o from tests/hidden/23.1/test_x.c
$(GRADE_DIR)/hidden/%.o: tests/hidden/%.c harness/grading/grade.mk
	@mkdir -p $(dir $@)
	$(call say,CC,$<) $(CC) $(CFLAGS) -g0 -Itests $(call lab_incs,$(patsubst %/,%,$(dir $*))) -c -o $@ $< \
	  && objcopy --strip-unneeded $@

# In a scratch copy (GRADE_SCRATCH=1): every suite and driver links the hook first, and a
# held-out suite links from its object (GRADE_HIDDEN holds them, outside the scratch tree),
# with -lm as the visible lab suites (testutil's tensor comparisons call fmax).
ifeq ($(GRADE_SCRATCH),1)
$(BUILD)/tests/%: private LDFLAGS += -lgradehook
$(BUILD)/bin/%: private LDFLAGS += -lgradehook

define GRADE_HIDDEN_RULES
$(BUILD)/tests/$(1)/hidden_%: $(GRADE_HIDDEN)/$(1)/%.o $(call lab_lib,$(1))
	@mkdir -p $$(dir $$@)
	$$(call say,TEST,$$@) $$(CC) $$(CFLAGS) -o $$@ $$< $$(LDFLAGS) -Wl,-rpath,'$$$$ORIGIN/../../lib' \
	  $(call lab_links,$(1)) -luopc -lcmocka -lpthread -lm
endef
$(foreach l,$(LAB_IDS),$(eval $(call GRADE_HIDDEN_RULES,$(l))))
endif

# The source screen's view of a file (screen.py, check_unit): its translation unit as the compiler
# sees it, preprocessed with the flags its object compiles with (the Makefile's stage_cflags).
# build/labs/tu/labs/23.1-symbolic-dims/sym_dim.i from labs/23.1-symbolic-dims/sym_dim.c; made in
# the grader's tree from the handout's files, and in a scratch copy, in the sandbox, from the student's.
TU_DIR := $(BUILD)/tu
define GRADE_TU_RULES
$(patsubst %.c,$(TU_DIR)/%.i,$(call lab_src,$(1))): EXTRA_CFLAGS = $(call stage_cflags,$(1))
endef
$(foreach l,$(STAGES),$(eval $(call GRADE_TU_RULES,$(l))))
$(TU_DIR)/%.i: %.c
	@mkdir -p $(dir $@)
	$(call say,CPP,$<) $(CC) $(CFLAGS) $(EXTRA_CFLAGS) -E -o $@ $<
