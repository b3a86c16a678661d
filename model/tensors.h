/*
 * tensors.h — the tensor table (tensors.c), internal to model/: model.c
 * builds it at model_init and binds the typed views of the parameter and
 * gradient blocks through it.  Outside model/ the table is m->tensors.
 */
#ifndef GATELAB_MODEL_TENSORS_H
#define GATELAB_MODEL_TENSORS_H

#include <stddef.h>

#include "model.h"

/* Every tensor of c in parameter-block order (*out malloc'd, *n_out rows,
 * *total floats).  Returns 0, or -1 when out of memory (nothing allocated). */
int tensors_build(const gl_model_config *c, gl_tensor **out, int *n_out, size_t *total);

/* Point every typed view of P (layer, router and xl arrays already
 * allocated) into base (the parameter or gradient block). */
void tensors_bind(const gl_model *m, gl_param_ptrs *P, float *base);

#endif
