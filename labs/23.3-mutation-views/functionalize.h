/* functionalize.h: a mutating program rewritten as one pure graph (lab 23.3).
 * Every storage's current value is a node; a load is its view applied to
 * that node (the view regenerated from the new base); a store replaces the
 * base's node by the base with the view's elements replaced (ir_view_set,
 * from the innermost step out); a let's value is its new storage's node. The
 * rest of the compiler sees a graph without effects, whose outputs are the
 * final values of the storages the program wrote. Chapter 23.3,
 * "Functionalization". */
#ifndef FUNCTIONALIZE_H
#define FUNCTIONALIZE_H

#include "mprog.h"

/* The student's step: *new_base = base after `base[view] = value`, where base
 * is a node of g holding all of view's storage and value a node of g with
 * the view's shape. Applies the view's steps to base (keeping each step's
 * node), then from the last step back to the first replaces that step's
 * elements in its source by the value so far (ir_view_set; an expand step,
 * which is no broadcast here, has its source's elements one for one: the
 * source becomes the value reshaped to its shape, ir_reshape), so the
 * result has base's shape. Errors: UOPC_E_ALIAS (a broadcast axis, as
 * mv_view_has_broadcast says: its elements would collide; a.expand(1, n)
 * has none), those of mv_view_has_broadcast, the graph's error (a step or
 * ir_view_set that failed). */
int functionalize_store(ir_graph *g, const mv_view *view, const ir_node *base, const ir_node *value,
                        const ir_node **new_base, uopc_error *err);

/* The pass (given): g receives one contiguous input per external storage,
 * named as it, in storage order, and every statement rewritten; outputs[k]
 * (an array of mv_program_storage_count entries, NULL for a storage the
 * program neither writes nor makes) is storage k's final value. The caller
 * owns *g. Errors: those of the builders and of functionalize_store. */
int functionalize(const mv_program *p, ir_graph **g, const ir_node ***outputs, uopc_error *err);

#endif
