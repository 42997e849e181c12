#pragma once
/// Which part of a run allocated the memory that is still live. The runtime
/// opens a scope for each phase of each image (one while loading the phase's
/// component, one for the phase's own work) and one between phases; a backend
/// that attributes allocations (cpu) keeps each block's scope, so memory still
/// live images later names the phase that allocated it: what a leak report
/// attributes exactly rather than infers.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mold/base/bytes.hpp"
#include "mold/device/backend.hpp"

namespace mold {

enum class ScopeKind {
  between_phases,  ///< the pipeline's own work around its phases
  load,            ///< loading the phase's component (its weights)
  phase,           ///< the phase's work
};
std::string_view to_string(ScopeKind kind);

struct AllocationScope {
  int image = 0;          ///< 0-based image of the run
  std::string phase;      ///< "" between phases
  std::string component;  ///< the component the phase runs
  ScopeKind kind = ScopeKind::between_phases;
};

/// Live bytes of one scope.
struct ScopeResidue {
  /// None: allocated outside every scope (before the run, or after the
  /// table filled).
  std::optional<AllocationScope> scope;
  Bytes bytes = 0;
};

/// The process's scopes, shared by every run (a scope's id must stay unique
/// while any of its bytes live).
class AllocationScopes {
 public:
  /// Makes `scope` current on `backend` and returns its id; 0 (no scope)
  /// where the backend does not attribute allocations. Once
  /// kMaxAllocationScopes - 1 scopes were opened, ids whose bytes are all
  /// freed are reused (0 when every one still holds bytes).
  static std::uint32_t open(Backend& backend, AllocationScope scope);
  /// Ends attribution on `backend`: later allocations have no scope.
  static void close(Backend& backend);
  /// What scope `id` was; none for 0 or an unknown id.
  static std::optional<AllocationScope> describe(std::uint32_t id);
  /// `backend`'s live bytes per scope, described; empty where it does not
  /// attribute allocations.
  static std::vector<ScopeResidue> residue(const Backend& backend);
};

}  // namespace mold
