// _core.Store's C++ side: what the Python object holds (the compiled store), and the
// parts of its class registered from their own files. register_store.cpp makes the class.
#pragma once
#include <pybind11/pybind11.h>
#include <cstddef>
#include <memory>
#include <string>
#include "chrono/store.hpp"

namespace py = pybind11;

namespace chrono_bind {

struct PyStore {
  std::unique_ptr<chrono::Store> s;

  PyStore(std::size_t dim, const std::string& metric, std::size_t M, std::size_t efc, std::size_t seed)
      : s(std::make_unique<chrono::Store>(dim, chrono::parse_metric(metric), M, efc, seed)) {}
};

using StoreClass = py::class_<PyStore>;

}  // namespace chrono_bind

void register_store_search(chrono_bind::StoreClass& c);  // search_one, search_batch
void register_store_checks(chrono_bind::StoreClass& c);  // the store's internals, for tests
void register_store_user(chrono_bind::StoreClass& c);    // user metadata columns, where= filter rows
