# The workbook's build. `make lab-23` runs the labs, `make test` runs every
# test; both set up what is missing first (tools/setup.sh). Each stage builds
# as its own shared library: uopc, then one per lab, linked against the
# earlier stages it uses. IMPL=solutions swaps the student files of labs/ for
# the reference ones in solutions/; everything else (headers, drivers, tests)
# always comes from labs/ and tests/.

# `make test` checks the reference (solutions/) unless IMPL is given; in a
# student handout, which has no solutions/, it checks the student's code.
ifeq ($(origin IMPL),undefined)
TEST_IMPL := $(if $(wildcard solutions/),solutions,labs)
else
TEST_IMPL := $(IMPL)
endif
IMPL ?= labs
SAN ?=
# COV=1 builds with gcov's counters (make coverage-uopc) into a directory of its own.
COV ?=
CC := gcc
# Quiet by default: one line per step; `make V=1` shows every command.
V ?= 0
Q := $(if $(filter 1,$(V)),,@)
# (quoted: a path with a note, "uopc/src/x.c [faults]", is one argument, not two lines)
say = $(if $(filter 1,$(V)),,@printf '  %-6s %s\n' '$(1)' '$(2)';)
PYTHON := .venv/bin/python
BUILD := build/$(IMPL)$(if $(SAN),-san)$(if $(COV),-cov)

ifneq ($(IMPL),labs)
ifneq ($(IMPL),solutions)
$(error IMPL must be 'labs' or 'solutions', not '$(IMPL)')
endif
endif

# A student handout has no solutions/: the reference and the targets that make things from it
# are the instructor's, and say so instead of running the stubs or failing at the linker.
INSTRUCTOR_ONLY := goldens check-goldens handout handout-ref-libs autograder labs check-sync gpu-check
ifeq ($(wildcard solutions/),)
ifeq ($(IMPL),solutions)
$(error IMPL=solutions runs the reference in solutions/, which a student handout does not have: run without IMPL to use your code in labs/)
endif
ifneq ($(filter $(INSTRUCTOR_ONLY),$(MAKECMDGOALS)),)
$(error make $(filter $(INSTRUCTOR_ONLY),$(MAKECMDGOALS)) is for instructors: it needs solutions/, which a student handout does not have (see README.md))
endif
endif

SANFLAGS :=
ifneq ($(SAN),)
SANFLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
endif
# -O0: at -O2 gcc merges like lines (two identical snprintf calls count as one), so gcov
# would report a line that ran as missed; _FORTIFY_SOURCE needs the optimiser, so it goes too.
# Atomic counters: the suites build from several threads, whose plain increments can race
# into counts gcov reads as negative.
ifneq ($(COV),)
SANFLAGS += --coverage -fprofile-update=atomic -O0
endif
# Without SAN, glibc's _FORTIFY_SOURCE=3 checks string and memory calls against what is left of
# the object they write into, offsets computed at run time included: a snprintf told that its
# buffer is larger stops the program (SAN=1's AddressSanitizer checks every access instead).
FORTIFY := $(if $(SAN)$(COV),,-D_FORTIFY_SOURCE=3)
# -MF $@.d: a name per output (gcc would name lab-23.1 and lab-23.2 alike lab-23.d).
CFLAGS = -std=c11 -D_GNU_SOURCE -O2 -g -Wall -Wextra -Werror -fPIC $(SANFLAGS) $(FORTIFY) -Iuopc/include -MMD -MP -MF $@.d
LDFLAGS := $(SANFLAGS) -Wl,-rpath,'$$ORIGIN' -L$(BUILD)/lib
.DEFAULT_GOAL := all

# ---- the runtime ------------------------------------------------------------
UOPC_SRC := $(wildcard uopc/src/*.c)
UOPC_OBJ := $(UOPC_SRC:%.c=$(BUILD)/obj/%.o)
UOPC_LIB := $(BUILD)/lib/libuopc.so

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(call say,CC,$<) $(CC) $(CFLAGS) $(EXTRA_CFLAGS) -c $< -o $@

# libgomp is the runtime's own dependency, though no runtime code calls it: a kernel compiled with
# -fopenmp (LOWER_PARALLEL) then finds it loaded with the process. Brought in by the kernel's own
# dlopen instead, it would be unloaded with the last such kernel while its threads are parked in
# its code, and glibc 2.36 cannot undo a dlopen that runs out of memory while another handle holds
# such a dependency: the object then never loads again in that process (tests' allocation sweeps).
UOPC_LDLIBS := -ldl -lcrypto -lpthread -Wl,--push-state,--no-as-needed -lgomp -Wl,--pop-state

$(UOPC_LIB): $(UOPC_OBJ)
	@mkdir -p $(dir $@)
	$(call say,LINK,$@) $(CC) -shared $(LDFLAGS) -o $@ $^ $(UOPC_LDLIBS)

# ---- the stages -------------------------------------------------------------
# Each stage builds as its own shared library, linked against the stages below
# it (README, "The stack"), bottom up:
#   sym     lab 23.1's symbols and loops: every .c file of labs/23.1-symbolic-dims/
#           but its plans (plan.c) and its driver (liblab23_1_sym.so)
#   core    the compiler core, labs/core/: the graph IR, the lowering, both back
#           ends, the binder and runners, the interpreter (libcore.so); it calls sym
#   23.1    lab 23.1's plans, plan.c, on the core (liblab23_1.so)
#   23.N    every .c file of labs/23.N-name/ but main.c (liblab23_N.so)
#   tj      tensorjit, labs/tensorjit/ and lab 23.7's files (labs/23.7-tensorjit/ but its
#           driver): 23.4's traces as artifacts of 23.2's variant cache (libtensorjit.so; its
#           tests are tests/tensorjit/ and tests/23.7/). Lab 23.7 is this stage: its driver,
#           tests and broken builds link libtensorjit.so, as lab 23.1's students write sym.
# A file that also exists in solutions/<folder>/ is a student file: IMPL chooses
# which copy is compiled. LAB_DEPS_x lists the stages x links, nearest first.
LAB_DIRS := $(patsubst %/,%,$(sort $(wildcard labs/23.*-*/)))
LAB_IDS := $(foreach d,$(LAB_DIRS),$(firstword $(subst -, ,$(notdir $(d)))))
CORE_DIR := $(wildcard labs/core)
TJ_DIR := $(wildcard labs/tensorjit)
# The lab whose files are part of tensorjit's stage; it has no library of its own.
TJ_LAB := 23.7
TJ_LAB_IDS := $(filter $(TJ_LAB),$(LAB_IDS))
STAGES := $(if $(CORE_DIR),sym core) $(filter-out $(TJ_LAB),$(LAB_IDS)) $(if $(TJ_DIR),tj)
LAB_DEPS_sym :=
LAB_DEPS_core := sym
LAB_DEPS_23.1 := core sym
LAB_DEPS_23.2 := core sym
LAB_DEPS_23.3 := core sym
LAB_DEPS_23.4 := core sym
LAB_DEPS_23.5 := core sym
LAB_DEPS_tj := 23.4 23.2 core sym
LAB_DEPS_$(TJ_LAB) := tj $(LAB_DEPS_tj)
# Lab 23.1's files above the core; the rest of its folder is the stage sym.
LAB231_PLANS := plan.c

lab_dir = $(filter labs/$(1)-%,$(LAB_DIRS))
stage_dir = $(if $(filter sym,$(1)),$(call lab_dir,23.1),$(if $(filter core,$(1)),$(CORE_DIR),$(if $(filter tj,$(1)),$(TJ_DIR),$(call lab_dir,$(1)))))
stage_name = $(if $(filter sym,$(1)),lab23_1_sym,$(if $(filter core,$(1)),core,$(if $(filter tj $(TJ_LAB),$(1)),tensorjit,lab$(subst .,_,$(1)))))
lab_lib = $(BUILD)/lib/lib$(call stage_name,$(1)).so
stage_all = $(filter-out %/main.c,$(wildcard $(call stage_dir,$(1))/*.c))
stage_files = $(if $(filter sym,$(1)),$(filter-out $(addprefix %/,$(LAB231_PLANS)),$(call stage_all,sym)),\
  $(if $(filter 23.1,$(1)),$(filter $(addprefix %/,$(LAB231_PLANS)),$(call stage_all,23.1)),\
  $(if $(filter tj $(TJ_LAB),$(1)),$(call stage_all,tj) $(call stage_all,$(TJ_LAB)),$(call stage_all,$(1)))))
# (a student file's reference is solutions/<its own folder>/<its name>)
lab_src = $(foreach f,$(call stage_files,$(1)),\
  $(if $(and $(filter solutions,$(IMPL)),$(wildcard solutions/$(notdir $(patsubst %/,%,$(dir $(f))))/$(notdir $(f)))),\
    solutions/$(notdir $(patsubst %/,%,$(dir $(f))))/$(notdir $(f)),$(f)))
# (sort: lab 23.1's folder is also sym's, and is named once)
lab_incs = $(addprefix -I,$(sort $(foreach l,$(1) $(LAB_DEPS_$(1)),$(call stage_dir,$(l)))))
lab_deps_links = $(foreach l,$(LAB_DEPS_$(1)),-l$(call stage_name,$(l)))
# A binary names every stage it uses as its own DT_NEEDED (gcc passes --as-needed, which would
# drop those main.c never calls), so that its RUNPATH, not a library's, finds each of them.
lab_links = -l$(call stage_name,$(1)) -Wl,--push-state,--no-as-needed $(call lab_deps_links,$(1)) -Wl,--pop-state

# ---- the reference's earlier stages (a student handout) -------------------------
# A handout ships reference/lib/: the reference's libraries of the stages with student files
# that a later stage links (tools/handout.sh; reference/README.md). There, each stage's binaries
# find in $(BUILD)/ref/<stage>/ links to the reference's copies of its earlier stages (never of
# its own lab: lab 23.1's binaries keep your sym), before $(BUILD)/lib on their RUNPATH. The
# loader maps a binary's DT_NEEDED first, from its RUNPATH, and every library that names one of
# them later gets that copy, so the process runs on the reference's lab 23.1 and your lab 23.N.
# OWN_STAGES=1 empties those folders: the whole stack as you wrote it (no relink needed).
# The instructor's tree (no reference/) and the grader's scratch trees link as before.
OWN_STAGES ?=
# (0 means off, as 1 means on; the recipes' scripts read the same value)
override OWN_STAGES := $(filter-out 0,$(OWN_STAGES))
export OWN_STAGES
REF_LIB := $(wildcard reference/lib)
REF_MODE := $(if $(OWN_STAGES),own,reference)
stage_lab = $(if $(filter sym,$(1)),23.1,$(if $(filter tj,$(1)),$(TJ_LAB),$(1)))
ref_stages = $(strip $(if $(REF_LIB),$(foreach l,$(LAB_DEPS_$(1)),$(if $(filter-out $(call stage_lab,$(1)),$(call stage_lab,$(l))),\
  $(if $(wildcard $(REF_LIB)/lib$(call stage_name,$(l)).so),$(l))))))
ref_dir = $(BUILD)/ref/$(1)
ref_stamp = $(if $(call ref_stages,$(1)),$(call ref_dir,$(1))/.$(REF_MODE))
# $(1) a stage, $(2) the path from the binary's folder to $(BUILD) ("../", "../../")
comma := ,
ref_rpath = $(if $(call ref_stages,$(1)),-Wl$(comma)-rpath$(comma)'$$ORIGIN/$(2)ref/$(1)')
# (the stamp names the mode: switching OWN_STAGES remakes the folder)
define REF_RULES
$(call ref_stamp,$(1)):
	@rm -rf $(call ref_dir,$(1)) && mkdir -p $(call ref_dir,$(1)) $(if $(OWN_STAGES),,$(foreach l,$(call ref_stages,$(1)),&& ln -s ../../../../$(REF_LIB)/lib$(call stage_name,$(l)).so $(call ref_dir,$(1))/)) && touch $$@
endef
$(foreach l,$(STAGES) $(TJ_LAB_IDS),$(if $(call ref_stages,$(l)),$(eval $(call REF_RULES,$(l)))))
# The stages whose reference tools/handout.sh ships: those with student files that a stage
# of another lab links (sym: 23.2 to 23.5 and the core; 23.2 and 23.4: tensorjit).
HANDOUT_REF_STAGES = $(sort $(foreach s,$(STAGES),$(foreach l,$(LAB_DEPS_$(s)),\
  $(if $(and $(filter-out $(call stage_lab,$(s)),$(call stage_lab,$(l))),$(wildcard solutions/$(notdir $(call stage_dir,$(l))))),$(l)))))

# Lab code (labs/ and solutions/ alike, in every build and in the grader's) indexes its arrays
# under -fsanitize=bounds: an index outside an array of known size stops the program with
# SIGILL (a trap, so no runtime library is loaded) instead of reading or writing its
# neighbour, which no test of values could see. `make SAN=1 test-c` names the line (SAN=1
# reports every undefined behaviour, bounds included, with its place, so it replaces the trap).
LAB_BOUNDS := $(if $(SAN),,-fsanitize=bounds -fsanitize-undefined-trap-on-error)

# $(1) a stage: its objects, each compiled with its own stage's include path (the folders of
# the stage and those below it, so a file cannot include a header above its layer), and its library.
# (stage_cflags: also what the grader preprocesses a student file with, harness/grading/grade.mk)
stage_cflags = $(call lab_incs,$(1)) $(LAB_BOUNDS)
define STAGE_RULES
$(patsubst %.c,$(BUILD)/obj/%.o,$(call lab_src,$(1))): EXTRA_CFLAGS = $(call stage_cflags,$(1))
$(call lab_lib,$(1)): $(patsubst %.c,$(BUILD)/obj/%.o,$(call lab_src,$(1))) $(UOPC_LIB) $(foreach l,$(LAB_DEPS_$(1)),$(call lab_lib,$(l)))
	@mkdir -p $$(dir $$@)
	$$(call say,LINK,$$@) $$(CC) -shared $$(LDFLAGS) -o $$@ $$(filter %.o,$$^) $(call lab_deps_links,$(1)) -luopc -lm
endef
$(foreach l,$(STAGES),$(eval $(call STAGE_RULES,$(l))))

define LAB_RULES
$(BUILD)/bin/lab-$(1): $(call lab_dir,$(1))/main.c $(call lab_lib,$(1)) | $(call ref_stamp,$(1))
	@mkdir -p $$(dir $$@)
	$$(call say,LINK,$$@) $$(CC) $$(CFLAGS) $(call lab_incs,$(1)) -o $$@ $$< $$(LDFLAGS) $$(call ref_rpath,$(1),../) -Wl,-rpath,'$$$$ORIGIN/../lib' $(call lab_links,$(1)) -luopc -lm
endef
$(foreach l,$(LAB_IDS),$(eval $(call LAB_RULES,$(l))))

LAB_BINS := $(foreach l,$(LAB_IDS),$(BUILD)/bin/lab-$(l))
LAB_LIBS := $(foreach l,$(STAGES),$(call lab_lib,$(l)))

# ---- tests ------------------------------------------------------------------
# tests/uopc/test_x.c links the runtime; tests/core/test_x.c the compiler core
# (and lab 23.1's symbols below it); tests/23.N/test_x.c links lab 23.N (and
# the stages below it); tests/tensorjit/test_x.c links tensorjit. Test-only
# builds with a guard removed live in tests/broken.mk.
TEST_SRC := $(wildcard tests/uopc/test_*.c tests/core/test_*.c tests/23.*/test_*.c tests/tensorjit/test_*.c)
TEST_BINS := $(TEST_SRC:%.c=$(BUILD)/%)
test_lab = $(patsubst tests/%/,%,$(dir $(1)))

$(BUILD)/tests/uopc/%: tests/uopc/%.c $(UOPC_LIB)
	@mkdir -p $(dir $@)
	$(call say,TEST,$@) $(CC) $(CFLAGS) -Itests -o $@ $< $(LDFLAGS) -Wl,-rpath,'$$ORIGIN/../../lib' -luopc -lcmocka -lpthread

test_dir = $(if $(filter tj,$(1)),tensorjit,$(1))
define TEST_RULES
$(BUILD)/tests/$(call test_dir,$(1))/%: tests/$(call test_dir,$(1))/%.c $(call lab_lib,$(1)) | $(call ref_stamp,$(1))
	@mkdir -p $$(dir $$@)
	$$(call say,TEST,$$@) $$(CC) $$(CFLAGS) -Itests $(call lab_incs,$(1)) -o $$@ $$< $$(LDFLAGS) $$(call ref_rpath,$(1),../../) -Wl,-rpath,'$$$$ORIGIN/../../lib' $(call lab_links,$(1)) -luopc -lcmocka -lpthread -lm
endef
$(foreach l,$(filter-out sym,$(STAGES)) $(TJ_LAB_IDS),$(eval $(call TEST_RULES,$(l))))

# ---- broken builds ----------------------------------------------------------
# tests/broken/23.N.mk builds the reference with one guard removed and links a
# suite against it. Each entry of BROKEN_EXPECT is BINARY:TEST: `make test`
# passes only if that test fails for that build, which proves the suite can
# catch the wrong dispatch the guard prevents. A broken build's directory
# holds its lab libraries, found first through -L and $$ORIGIN. Entries of
# BROKEN_GIVEN_EXPECT remove a guard from given code (the variant cache):
# `make test` checks them alike; the grader, which grades student files
# only, does not replay them.
BROKEN := $(BUILD)/broken
broken_test_link = $(call say,TEST,$@) $(CC) $(CFLAGS) -Itests $(call lab_incs,$(1)) -o $@ $< -L$(dir $@) $(LDFLAGS) \
  -Wl,-rpath,'$$ORIGIN' -Wl,-rpath,'$$ORIGIN/../../lib' $(call lab_links,$(1)) -luopc -lcmocka -lpthread
include $(sort $(wildcard tests/broken/*.mk))

# ---- break it yourself (make break) -------------------------------------------
# make break LAB=23.N [GUARD=name] [IMPL=solutions]: lab 23.N built from your files with one
# guard removed, and your experiment test run against the correct build and the broken one.
# tests/student/guards.txt lists the guards: the file that holds one is compiled again with its
# -D macro (those of tests/broken/) into build/<impl>/break/23.N-<name>/, and linked with the
# rest of the lab's objects as they are. The experiment test is tests/student/23.N/test_my_guard.c
# (IMPL=solutions: the reference's, solutions/23.N-name/tests/test_my_guard.c); the grader's
# "experiment" tests build the same targets.
BREAK := $(BUILD)/break
# (sed, not awk: the grader's sandbox has no /etc/alternatives, where Debian's awk lives)
BREAK_TABLE := $(shell sed -nE 's/^([0-9.]+) +([a-z0-9-]+) +([A-Z0-9_]+) +([a-z0-9_]+\.c) .*/\1:\2:\3:\4/p' tests/student/guards.txt 2>/dev/null)
BREAK_LABS := $(sort $(foreach g,$(BREAK_TABLE),$(word 1,$(subst :, ,$(g)))))
student_test = $(if $(filter solutions,$(IMPL)),solutions/$(notdir $(call lab_dir,$(1)))/tests,tests/student/$(1))/test_my_guard.c
lab_objs = $(patsubst %.c,$(BUILD)/obj/%.o,$(call lab_src,$(1)))

# The experiment test against the lab as built (LAB_DEPS: the earlier stages).
define STUDENT_TEST_RULES
$(BUILD)/tests/student/$(1)/test_my_guard: $(call student_test,$(1)) $(call lab_lib,$(1)) | $(call ref_stamp,$(1))
	@mkdir -p $$(dir $$@)
	$$(call say,TEST,$$@) $$(CC) $$(CFLAGS) -Itests $(call lab_incs,$(1)) -o $$@ $$< $$(LDFLAGS) $$(call ref_rpath,$(1),../../../) -Wl,-rpath,'$$$$ORIGIN/../../../lib' $(call lab_links,$(1)) -luopc -lcmocka -lpthread -lm
endef
$(foreach l,$(BREAK_LABS),$(eval $(call STUDENT_TEST_RULES,$(l))))

# $(1) lab, $(2) guard name, $(3) macro, $(4) the file that holds the guard.
define BREAK_RULES
$(BREAK)/$(1)-$(2)/obj/$(4:.c=.o): $(filter %/$(4),$(call lab_src,$(1)))
	@mkdir -p $$(dir $$@)
	$$(call say,CC,$$<) $$(CC) $$(CFLAGS) $$(LAB_BOUNDS) -D$(3) $(call lab_incs,$(1)) -c $$< -o $$@
$(BREAK)/$(1)-$(2)/lib$(call stage_name,$(1)).so: $(BREAK)/$(1)-$(2)/obj/$(4:.c=.o) $(filter-out %/$(4:.c=.o),$(call lab_objs,$(1))) $(UOPC_LIB) $(foreach l,$(LAB_DEPS_$(1)),$(call lab_lib,$(l)))
	$$(call say,LINK,$$@) $$(CC) -shared $$(LDFLAGS) -Wl,-rpath,'$$$$ORIGIN/../../lib' -o $$@ $$(filter %.o,$$^) $(call lab_deps_links,$(1)) -luopc
$(BREAK)/$(1)-$(2)/test_my_guard: $(call student_test,$(1)) $(BREAK)/$(1)-$(2)/lib$(call stage_name,$(1)).so | $(call ref_stamp,$(1))
	$$(call say,TEST,$$@) $$(CC) $$(CFLAGS) -Itests $(call lab_incs,$(1)) -o $$@ $$< -L$$(dir $$@) $$(LDFLAGS) \
	  -Wl,-rpath,'$$$$ORIGIN' $$(call ref_rpath,$(1),../../) -Wl,-rpath,'$$$$ORIGIN/../../lib' $(call lab_links,$(1)) -luopc -lcmocka -lpthread -lm
endef
$(foreach g,$(BREAK_TABLE),$(eval $(call BREAK_RULES,$(word 1,$(subst :, ,$(g))),$(word 2,$(subst :, ,$(g))),$(word 3,$(subst :, ,$(g))),$(word 4,$(subst :, ,$(g))))))

# ---- the runtime built again ------------------------------------------------
# $(1) a folder, $(2) a macro, $(3) the note its compiles print, $(4) a folder of tests/: the
# runtime compiled with -D$(2) into $(1)/libuopc.so, and each tests/$(4)/test_*.c linked with it.
define RUNTIME_VARIANT
$(1)/obj/%.o: %.c
	@mkdir -p $$(dir $$@)
	$$(call say,CC,$$< [$(3)]) $$(CC) $$(CFLAGS) -D$(2) -c $$< -o $$@
$(1)/libuopc.so: $$(UOPC_SRC:%.c=$(1)/obj/%.o)
	$$(call say,LINK,$$@) $$(CC) -shared $$(SANFLAGS) -o $$@ $$^ $$(UOPC_LDLIBS)
$(1)/%: tests/$(4)/%.c $(1)/libuopc.so
	$$(call say,TEST,$$@) $$(CC) $$(CFLAGS) -D$(2) -Itests -o $$@ $$< $$(SANFLAGS) -L$(1) -Wl,-rpath,'$$$$ORIGIN' -luopc -lcmocka -lpthread
endef
# Fault injection, for tests/faults/: they make the k-th spawn, dlopen, cache write or rename
# fail and check that each error path reports and cleans up (STYLE item 13).
FAULT := $(BUILD)/fault
$(eval $(call RUNTIME_VARIANT,$(FAULT),UOPC_FAULT_INJECTION,faults,faults))
FAULT_BINS := $(patsubst tests/faults/%.c,$(FAULT)/%,$(wildcard tests/faults/test_*.c))
TEST_BINS += $(FAULT_BINS)
# Guard pages: each tensor's storage ends at a PROT_NONE page, and the bytes up to its 64-byte
# boundary are checked when it is freed (uopc/src/tensor.c). Every graded run loads it
# (harness/grading/workspace.py); tests/guarded/ tests it.
GUARDED := $(BUILD)/guarded
$(eval $(call RUNTIME_VARIANT,$(GUARDED),UOPC_GUARD_PAGES,guard pages,guarded))
GUARDED_BINS := $(patsubst tests/guarded/%.c,$(GUARDED)/%,$(wildcard tests/guarded/test_*.c))
TEST_BINS += $(GUARDED_BINS)

# ---- benchmarks -------------------------------------------------------------
# bench/bench_23_N.c links lab 23.N; bench/report.py runs them and adds NumPy.
define BENCH_RULES
$(BUILD)/bin/bench_$(subst .,_,$(1)): bench/bench_$(subst .,_,$(1)).c $(call lab_lib,$(1)) | $(call ref_stamp,$(1))
	@mkdir -p $$(dir $$@)
	$$(call say,LINK,$$@) $$(CC) $$(CFLAGS) $(call lab_incs,$(1)) -o $$@ $$< $$(LDFLAGS) $$(call ref_rpath,$(1),../) -Wl,-rpath,'$$$$ORIGIN/../lib' $(call lab_links,$(1)) -luopc
endef
BENCH_LABS := $(foreach l,$(LAB_IDS),$(if $(wildcard bench/bench_$(subst .,_,$(l)).c),$(l)))
$(foreach l,$(BENCH_LABS),$(eval $(call BENCH_RULES,$(l))))
BENCH_BINS := $(foreach l,$(BENCH_LABS),$(BUILD)/bin/bench_$(subst .,_,$(l)))
# The compiler core alone (labs/core).
$(BUILD)/bin/bench_core: bench/bench_core.c $(call lab_lib,core) | $(call ref_stamp,core)
	@mkdir -p $(dir $@)
	$(call say,LINK,$@) $(CC) $(CFLAGS) $(call lab_incs,core) -o $@ $< $(LDFLAGS) $(call ref_rpath,core,../) -Wl,-rpath,'$$ORIGIN/../lib' $(call lab_links,core) -luopc
BENCH_BINS += $(BUILD)/bin/bench_core
# Fusion's figures through the core (LOWER_FUSE with tensorjit's rule, TJ_FUSE_RULE): a 6-op
# chain against the triad, softmax and layer norm, compile time.
$(BUILD)/bin/bench_fuse: bench/bench_fuse.c $(call lab_lib,tj) | $(call ref_stamp,tj)
	@mkdir -p $(dir $@)
	$(call say,LINK,$@) $(CC) $(CFLAGS) $(call lab_incs,tj) -o $@ $< $(LDFLAGS) $(call ref_rpath,tj,../) -Wl,-rpath,'$$ORIGIN/../lib' $(call lab_links,tj) -luopc -lm
BENCH_BINS += $(if $(TJ_DIR),$(BUILD)/bin/bench_fuse)
# LOWER_VEC_EXP's exp_f32 against expf over every f32 (about a minute; not run by make bench).
$(BUILD)/bin/exp_sweep: bench/exp_sweep.c $(call lab_lib,core) | $(call ref_stamp,core)
	@mkdir -p $(dir $@)
	$(call say,LINK,$@) $(CC) $(CFLAGS) $(call lab_incs,core) -o $@ $< $(LDFLAGS) $(call ref_rpath,core,../) -Wl,-rpath,'$$ORIGIN/../lib' $(call lab_links,core) -luopc -lm
# tensorjit (labs/tensorjit): its warm call, and its artifacts over lengths 0..64.
$(BUILD)/bin/bench_tensorjit: bench/bench_tensorjit.c $(call lab_lib,tj) | $(call ref_stamp,tj)
	@mkdir -p $(dir $@)
	$(call say,LINK,$@) $(CC) $(CFLAGS) $(call lab_incs,tj) -o $@ $< $(LDFLAGS) $(call ref_rpath,tj,../) -Wl,-rpath,'$$ORIGIN/../lib' $(call lab_links,tj) -luopc -lm
BENCH_BINS += $(if $(TJ_DIR),$(BUILD)/bin/bench_tensorjit)
# tensorjit's call latency against length, dynamic and static (TJ_OFF), for lab-23.7-plot's figure.
$(BUILD)/bin/bench_tj_latency: bench/bench_tj_latency.c $(call lab_lib,tj) | $(call ref_stamp,tj)
	@mkdir -p $(dir $@)
	$(call say,LINK,$@) $(CC) $(CFLAGS) $(call lab_incs,tj) -o $@ $< $(LDFLAGS) $(call ref_rpath,tj,../) -Wl,-rpath,'$$ORIGIN/../lib' $(call lab_links,tj) -luopc -lm
BENCH_BINS += $(if $(TJ_DIR),$(BUILD)/bin/bench_tj_latency)
# tensorjit's training (issue 28): a forward and backward step compiled against eager, and its artifacts.
$(BUILD)/bin/bench_train: bench/bench_train.c $(call lab_lib,tj) | $(call ref_stamp,tj)
	@mkdir -p $(dir $@)
	$(call say,LINK,$@) $(CC) $(CFLAGS) $(call lab_incs,tj) -o $@ $< $(LDFLAGS) $(call ref_rpath,tj,../) -Wl,-rpath,'$$ORIGIN/../lib' $(call lab_links,tj) -luopc -lm
BENCH_BINS += $(if $(TJ_DIR),$(BUILD)/bin/bench_train)
# tensorjit's availability for each back end: make doctor prints it.
$(BUILD)/bin/tj-available: tools/tj_available.c $(call lab_lib,tj) | $(call ref_stamp,tj)
	@mkdir -p $(dir $@)
	$(call say,LINK,$@) $(CC) $(CFLAGS) $(call lab_incs,tj) -o $@ $< $(LDFLAGS) $(call ref_rpath,tj,../) -Wl,-rpath,'$$ORIGIN/../lib' $(call lab_links,tj) -luopc

# ---- grading (harness/grade.py; see harness/grading/) -------------------------
# make grade                       the student code in labs/ (IMPL=solutions: the reference)
# make grade SUBMISSION=DIR        another tree, a lab folder or a flat upload of .c files
#   LABS="23.1 23.2"  SEED=N  LENGTHS=N  RESULTS=path (default build/results.json: harness/grade.py's, printed)
#   OWN_STAGES=1 (GRADE_FLAGS=--own-stages): the earlier stages a lab links from your files too
# make goldens / check-goldens     the golden counter logs from solutions/ / fail when stale (CI)
# make examples / check-examples   rewrite / check the runs the lab READMEs quote (make test checks);
#                                  check-examples also runs check-quoted
# make check-quoted                the counters the chapters and READMEs quote against goldens/ (no run),
#                                  and the .dot of tools/figures.py current
# make handout                     build/handout/uopc-labs.tar.gz, the student tree
# make autograder                  build/autograder.zip for Gradescope
# make test-grader                 the grader's self-check and its own tests (for `make test`)
GRADE_ARGS = $(LABS) $(if $(SUBMISSION),--submission $(SUBMISSION),--impl $(IMPL)) \
  $(if $(SEED),--seed $(SEED)) $(if $(LENGTHS),--lengths $(LENGTHS)) $(if $(RESULTS),--output $(RESULTS)) \
  $(if $(OWN_STAGES),--own-stages) $(GRADE_FLAGS)
.PHONY: grade goldens check-goldens examples check-examples check-quoted handout handout-ref-libs autograder test-grader

grade: setup
	@$(PYTHON) -m harness.grade $(GRADE_ARGS)

goldens: setup
	@$(PYTHON) -m harness.grading.goldens --write

check-goldens: setup
	@$(PYTHON) -m harness.grading.goldens --check

examples: setup
	@$(PYTHON) -m harness.grading.examples --write

check-examples: setup
	@$(PYTHON) -m harness.grading.examples --check
	@$(PYTHON) -m harness.grading.quoted

check-quoted: setup
	@$(PYTHON) -m harness.grading.quoted
	@$(PYTHON) tools/figures.py --check

handout: setup
	+@MAKE="$(MAKE)" tools/handout.sh build/handout/uopc-labs.tar.gz

# The libraries of build/solutions/lib that a handout ships in reference/lib (tools/handout.sh).
handout-ref-libs:
	@echo $(foreach l,$(HANDOUT_REF_STAGES),lib$(call stage_name,$(l)).so)

autograder:
	@autograder/bundle.sh build/autograder.zip

test-grader: setup
	@$(PYTHON) -m unittest discover -s tests/grader
	@$(PYTHON) -m harness.grading.selfcheck
	@$(PYTHON) -m harness.grading.examples --check
	@$(PYTHON) -m harness.grading.quoted

# ---- mutation testing (tools/mutants.py, issue #15) ----------------------------
# make mutants LAB=23.N [SAMPLE=N] [SEED=S] [JOBS=J] [MIN=PCT]
#                                  mutants of solutions/23.N-*/*.c, each graded by the grader
# make mutants LAB=23.N PER_FILE=N [SEED=S] [BAR=PCT]
#                                  a stratified draw: N mutants of each file (SAMPLE ignored);
#                                  every file below BAR % (default 90) is named
# make mutants LAB=23.N FILES=a.c,b.c PER_FILE=N
#                                  only those files: a deeper draw of the ones below the bar
# make mutants-uopc [SAMPLE=N] ...  mutants of uopc/src/*.c through tests/uopc and tests/faults
# make mutants-ci                  one mutant of a quarter of the solution files (23.1-23.5, 23.7) and uopc sources, the quarter
#                                  chosen by the commit (CI; MUTANTS_CI_FILES=all: every file)
# SAMPLE=0 runs every mutant (hours); the default is 40. Equivalent survivors are listed, with
# their reason, in tests/mutants/<LAB>.equivalents.
MUTANT_ARGS = $(if $(SAMPLE),--sample $(SAMPLE)) $(if $(SEED),--seed $(SEED)) $(if $(JOBS),--jobs $(JOBS)) $(if $(MIN),--min $(MIN)) \
  $(if $(PER_FILE),--per-file $(PER_FILE)) $(if $(BAR),--bar $(BAR)) $(if $(FILES),--files $(FILES))
.PHONY: mutants mutants-uopc mutants-ci

mutants: setup
	@$(if $(LAB),,echo "make mutants: say which lab, e.g. make mutants LAB=23.1 (make mutants-uopc: the runtime)"; exit 2)
	@tools/setup.sh --mutants
	@$(PYTHON) tools/mutants.py $(LAB) $(MUTANT_ARGS)

mutants-uopc: setup
	@tools/setup.sh --mutants
	@$(PYTHON) tools/mutants.py uopc $(MUTANT_ARGS)

mutants-ci: setup
	@tools/setup.sh --mutants
	@tools/mutants-ci.sh

# make coverage-uopc: the lines of uopc/src/*.c that the runtime's own suites (tests/uopc and
# tests/faults, the ones make mutants-uopc grades with) never run. A mutant of such a line
# survives every draw, so this list is the one to read before drawing. COV=1 builds with
# gcov's counters into build/<IMPL>-cov; gcovr merges the plain and the fault-injection build.
# METRIC=branch lists instead the lines with a branch no test takes (gcovr's --txt-metric).
METRIC ?= line
UOPC_TEST_BINS = $(filter $(BUILD)/tests/uopc/%,$(TEST_BINS)) $(FAULT_BINS)
.PHONY: coverage-uopc coverage-run
coverage-uopc: setup
	@tools/setup.sh --coverage
	@$(MAKE) --no-print-directory COV=1 coverage-run

coverage-run: $(UOPC_TEST_BINS)
	@find $(BUILD) -name '*.gcda' -delete
	@tools/run-tests.sh $(BUILD) -- $(UOPC_TEST_BINS) >$(BUILD)/coverage-tests.log || \
	  { cat $(BUILD)/coverage-tests.log; exit 1; }   # a failing suite's counts would mislead
	@tail -n 1 $(BUILD)/coverage-tests.log
	@$(PYTHON) -m gcovr --root . --filter 'uopc/src/' --sort uncovered-number --sort-reverse \
	  --txt-metric $(METRIC) --txt-summary $(BUILD)

# make break LAB=23.N lists the guards; with GUARD=name it builds and runs the experiment.
.PHONY: break
break: setup
	@tools/break.sh list "$(LAB)" "$(GUARD)" || exit 2; [ -n "$(GUARD)" ] || exit 0; \
	  $(MAKE) --no-print-directory $(BUILD)/tests/student/$(LAB)/test_my_guard $(BREAK)/$(LAB)-$(GUARD)/test_my_guard && \
	  tools/break.sh run "$(LAB)" "$(GUARD)" $(BUILD)/tests/student/$(LAB)/test_my_guard $(BREAK)/$(LAB)-$(GUARD)/test_my_guard \
	    $(call student_test,$(LAB))

# ---- commands ---------------------------------------------------------------
.PHONY: all setup lab-23 $(addprefix lab-,$(LAB_IDS)) test test-c test-build test-build-suites test-run test-harness tsan bench bench-run lab-23.5-plot lab-23.5-plot-run lab-23.7-plot lab-23.7-plot-run doctor gpu-check figures \
        clean cache-clean cache-stats labs check-sync

all: $(UOPC_LIB) $(LAB_LIBS) $(LAB_BINS) $(if $(TJ_DIR),$(BUILD)/bin/tj-available)

setup:
	@tools/setup.sh

lab-23: setup
	@$(MAKE) --no-print-directory all
	@IMPL=$(IMPL) OWN_STAGES=$(OWN_STAGES) tools/run-labs.sh $(BUILD) $(LAB_IDS)

$(addprefix lab-,$(LAB_IDS)): lab-%: setup
	@$(MAKE) --no-print-directory $(BUILD)/bin/lab-$*
	@IMPL=$(IMPL) OWN_STAGES=$(OWN_STAGES) tools/run-labs.sh $(BUILD) $*

# Any other lab-...: say which labs there are.
lab-%:
	@echo "make lab-$*: there is no lab $* in this tree; the labs are $(LAB_IDS) (make lab-23 runs every one)" >&2; exit 2

# Every test of TEST_IMPL, then the student tree's drivers: each must pass
# or report its stub as not implemented yet.
test: setup
	@$(MAKE) --no-print-directory IMPL=labs all
	@$(MAKE) --no-print-directory IMPL=$(TEST_IMPL) test-build
	@$(MAKE) --no-print-directory IMPL=$(TEST_IMPL) test-run \
	  HARNESS="--harness $(if $(filter solutions,$(TEST_IMPL)),--student-drivers build/labs $(LAB_IDS))"

# The C suites and the broken builds only (CI's sanitizer pass uses this). With SAN=1 the
# suites alone: a broken build proves that its suite catches a defect, which make test proves
# once, and building each again under the sanitizers took minutes of CI.
test-c: setup
	@$(MAKE) --no-print-directory IMPL=$(TEST_IMPL) $(if $(SAN),test-build-suites,test-build)
	@$(MAKE) --no-print-directory IMPL=$(TEST_IMPL) test-run $(if $(SAN),NO_BROKEN=1)

test-build: all $(TEST_BINS) $(BROKEN_BINS)
test-build-suites: all $(TEST_BINS)
test-run:
	@tools/run-tests.sh $(BUILD) $(HARNESS) -- $(TEST_BINS) -- $(if $(NO_BROKEN),,$(BROKEN_EXPECT) $(BROKEN_GIVEN_EXPECT))

# ThreadSanitizer over the suite that calls one exec from 8 threads (issue 27): the runtime, lab
# 23.1 and the core rebuilt with -fsanitize=thread into build/<impl>-tsan, then the suite, whose
# generated kernels are compiled with it too (tests/core/test_exec_threads.c). A race is a failure.
TSAN_BUILD = build/$(TEST_IMPL)-tsan
tsan: setup
	@$(MAKE) --no-print-directory IMPL=$(TEST_IMPL) SAN=1 SANFLAGS="-fsanitize=thread -fno-omit-frame-pointer" \
	  BUILD=$(TSAN_BUILD) $(TSAN_BUILD)/tests/core/test_exec_threads
	@TSAN_OPTIONS="halt_on_error=1 exitcode=66" $(TSAN_BUILD)/tests/core/test_exec_threads

test-harness: setup
	@$(MAKE) --no-print-directory all
	@$(PYTHON) -m harness.selfcheck --build $(BUILD)

# Benchmarks measure the reference (as `make test` checks it) unless IMPL is given.
# Both draw lab 23.5's latency figure into build/kv_latency.png, and write its README table
# from the same run into build/kv_latency.md (bench/kv_table.py) (matplotlib, installed
# by `tools/setup.sh --plot` from bench/requirements.txt when missing); `make bench` with a
# LAB= other than 23.5 draws no figure, so it neither installs matplotlib nor asks for one.
KV_PLOT := build/kv_latency.png
BENCH_PLOT = $(if $(filter-out 23.5,$(LAB)),,--plot $(KV_PLOT))
bench: setup
	@$(if $(BENCH_PLOT),tools/setup.sh --plot)
	@$(MAKE) --no-print-directory IMPL=$(TEST_IMPL) bench-run

bench-run: all $(BENCH_BINS)
	@$(PYTHON) bench/report.py $(BUILD)$(if $(LAB), --lab $(LAB)) $(BENCH_PLOT)

# Lab 23.5's benchmark alone, with its figure (chapter 23.5, "The figure").
lab-23.5-plot: setup
	@tools/setup.sh --plot
	@$(MAKE) --no-print-directory IMPL=$(TEST_IMPL) lab-23.5-plot-run

lab-23.5-plot-run: $(BUILD)/bin/bench_23_5
	@$(PYTHON) bench/report.py $(BUILD) --lab 23.5 --plot $(KV_PLOT)

# tensorjit's call latency against length, with NumPy's and a static compiler's (chapter 23.7,
# "Latency against length"): the figure chapters/figures/23.7-latency.png, its table in
# build/tj_latency.md, from one run (bench_tj_latency compiles into scratch caches of its own).
TJ_PLOT := chapters/figures/23.7-latency.png
lab-23.7-plot: setup
	@tools/setup.sh --plot
	@$(MAKE) --no-print-directory IMPL=$(TEST_IMPL) lab-23.7-plot-run

lab-23.7-plot-run: $(BUILD)/bin/bench_tj_latency
	@$(PYTHON) bench/report.py $(BUILD) --lab tj_latency --tj-plot $(TJ_PLOT) --tj-table build/tj_latency.md

# The checks that need a GPU (tools/gpu-check.sh): instructors with one; CI has none.
gpu-check: setup
	@$(MAKE) --no-print-directory IMPL=solutions all build/solutions/tests/uopc/test_cuda build/solutions/tests/core/test_exec_cuda build/solutions/tests/23.3/test_mirror
	tools/gpu-check.sh build/solutions

doctor:
	@tools/doctor.sh

# The chapters' figures: each chapters/figures/*.dot rendered to the .svg committed beside it.
# Needs Graphviz's dot (tools/setup.sh --figures installs Debian's graphviz); nothing else does.
# tools/figures.py writes 23.3's and 23.4's .dot first, from the listings and goldens they draw.
FIGURES := $(patsubst %.dot,%.svg,$(wildcard chapters/figures/*.dot))
figures:
	@$(PYTHON) tools/figures.py
	@command -v dot >/dev/null || tools/setup.sh --figures
	@$(MAKE) --no-print-directory $(FIGURES)
chapters/figures/%.svg: chapters/figures/%.dot
	$(call say,DOT,$@) dot -Tsvg $< -o $@

labs: setup
	@$(PYTHON) tools/stubgen.py --write

check-sync: setup
	@$(PYTHON) tools/stubgen.py --check

clean:
	rm -rf build

# The runtime's default cache location (uopc/src/cache.c), unless moved.
CACHE_DIR = $(or $(UOPC_CACHE_DIR),$(XDG_CACHE_HOME:%=%/uopc),$(HOME)/.cache/uopc)
cache-clean:
	rm -rf "$(CACHE_DIR)"

# The cache's statistics, as `ccache -s` prints them; reads, creates nothing.
cache-stats: $(BUILD)/bin/uopc-cache-stats
	@$(BUILD)/bin/uopc-cache-stats
$(BUILD)/bin/uopc-cache-stats: tools/cache_stats.c $(UOPC_LIB)
	@mkdir -p $(dir $@)
	$(call say,LINK,$@) $(CC) $(CFLAGS) -o $@ $< $(LDFLAGS) -Wl,-rpath,'$$ORIGIN/../lib' -luopc

# Dependency files of this build only (each build tree has its own).
-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
