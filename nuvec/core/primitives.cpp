#include "nuvec/core/primitives.h"

#include <type_traits>

namespace nuvec {

static_assert(std::is_nothrow_move_constructible_v<PrimitiveVariant> &&
                  std::is_nothrow_move_assignable_v<PrimitiveVariant>,
              "Primitive's moves are declared noexcept");

Primitive::Primitive() = default;
Primitive::Primitive(const Primitive& other) = default;
Primitive::Primitive(Primitive&& other) noexcept = default;
Primitive& Primitive::operator=(const Primitive& other) = default;
Primitive& Primitive::operator=(Primitive&& other) noexcept = default;
Primitive::~Primitive() = default;

bool operator==(const Primitive& a, const Primitive& b) {
  return static_cast<const PrimitiveVariant&>(a) == static_cast<const PrimitiveVariant&>(b);
}

Family family(const Primitive& p) {
  return std::visit([](const auto& alt) { return alt.family; }, p);
}

std::string_view name(const Primitive& p) {
  return std::visit([](const auto& alt) { return alt.name; }, p);
}

}  // namespace nuvec
