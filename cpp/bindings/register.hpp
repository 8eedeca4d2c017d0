// The parts of chrono_engine._core, each registered on the module from its own file by
// module.cpp, in the order given there.
#pragma once
#include <pybind11/pybind11.h>

namespace py = pybind11;

void register_kernels(py::module_& m);        // decay_eval, dot
void register_query_vectors(py::module_& m);  // unit_rows, list_f32
void register_names(py::module_& m);          // Names
void register_strings(py::module_& m);        // StringColumns, take_strings
void register_filter(py::module_& m);         // Filter (a where= filter's program)
void register_search_params(py::module_& m);  // SearchParams
void register_store(py::module_& m);          // Store (register_store*.cpp)
void register_score(py::module_& m);          // score
void register_ppr(py::module_& m);            // ppr
void register_arrow(py::module_& m);          // record_batch, json_rows
void register_testing(py::module_& m);        // the planner's int8 kernels, probe_choice, citation
