#include "mold/model/denoiser.hpp"

#include <sstream>

#include "mold/base/error.hpp"

namespace mold {

std::string Denoiser::shape_of(const at::Tensor& t) {
  if (!t.defined()) return "an undefined tensor";
  std::ostringstream out;
  out << t.sizes() << " " << t.scalar_type();
  return out.str();
}

void Denoiser::refuse_input(const std::string& who, const std::string& field,
                            const at::Tensor& t, const std::string& expected) {
  throw InvalidArgument(who + ": " + field + " is " + shape_of(t) +
                        "; expected " + expected);
}

void Denoiser::check_conditioning(const std::string& who,
                                  const DenoiserInput& in,
                                  int64_t batch) const {
  const std::string bs = std::to_string(batch);
  if (!in.timestep.defined() || in.timestep.dim() != 1 ||
      in.timestep.size(0) != batch || in.timestep.is_complex() ||
      in.timestep.scalar_type() == at::kBool)
    refuse_input(who, "timestep", in.timestep,
                 "(" + bs + ",) real, one per latent");
  const int64_t width = text_dim();
  if (!in.text.defined() || in.text.dim() != 3 || in.text.size(0) != batch ||
      in.text.size(1) < 1 || in.text.size(2) != width ||
      !c10::isFloatingType(in.text.scalar_type()))
    refuse_input(who, "text", in.text,
                 "(" + bs + ", L, " + std::to_string(width) +
                     ") floating point, L >= 1");
  if (!in.text_mask.defined() || in.text_mask.dim() != 2 ||
      in.text_mask.size(0) != batch ||
      in.text_mask.size(1) != in.text.size(1) ||
      !(in.text_mask.scalar_type() == at::kBool ||
        c10::isIntegralType(in.text_mask.scalar_type(), false)))
    refuse_input(
        who, "text_mask", in.text_mask,
        "(" + bs + ", " + std::to_string(in.text.size(1)) + ") bool (or 0/1)");
}

}  // namespace mold
