#include "mold/runtime/allocation_scope.hpp"

#include <mutex>

namespace mold {

namespace {

struct Table {
  std::mutex mutex;
  std::vector<AllocationScope> scopes;  // id = index + 1
  std::uint32_t next_reuse = 0;  // where the search for a free id resumes
};

Table& table() {
  static Table* t = new Table;  // outlives static tensors' deleters
  return *t;
}

}  // namespace

std::string_view to_string(ScopeKind kind) {
  switch (kind) {
  case ScopeKind::between_phases:
    return "between_phases";
  case ScopeKind::load:
    return "load";
  case ScopeKind::phase:
    return "phase";
  }
  return "?";
}

std::uint32_t AllocationScopes::open(Backend& backend, AllocationScope scope) {
  if (!backend.attributes_allocations()) return 0;
  std::uint32_t id = 0;
  {
    Table& t = table();
    std::lock_guard<std::mutex> lock(t.mutex);
    if (t.scopes.size() + 1 < kMaxAllocationScopes) {
      t.scopes.push_back(std::move(scope));
      id = std::uint32_t(t.scopes.size());
    } else {
      // Full (a long-running process): reuse a scope none of whose bytes is
      // live any more, so that no residue can name the wrong phase.
      std::vector<bool> live(kMaxAllocationScopes, false);
      for (const auto& [used, bytes] : backend.live_bytes_by_scope())
        if (bytes > 0 && used < kMaxAllocationScopes) live[used] = true;
      const std::uint32_t current = backend.set_allocation_scope(0);
      for (std::uint32_t i = t.next_reuse; i < t.next_reuse + t.scopes.size();
           ++i) {
        const std::uint32_t candidate = std::uint32_t(i % t.scopes.size()) + 1;
        if (!live[candidate] && candidate != current) {
          id = candidate;
          t.scopes[candidate - 1] = std::move(scope);
          t.next_reuse = candidate;
          break;
        }
      }
    }
  }
  backend.set_allocation_scope(id);
  return id;
}

void AllocationScopes::close(Backend& backend) {
  backend.set_allocation_scope(0);
}

std::optional<AllocationScope> AllocationScopes::describe(std::uint32_t id) {
  Table& t = table();
  std::lock_guard<std::mutex> lock(t.mutex);
  if (id == 0 || id > t.scopes.size()) return std::nullopt;
  return t.scopes[id - 1];
}

std::vector<ScopeResidue> AllocationScopes::residue(const Backend& backend) {
  std::vector<ScopeResidue> out;
  for (const auto& [id, bytes] : backend.live_bytes_by_scope())
    out.push_back({describe(id), bytes});
  return out;
}

}  // namespace mold
