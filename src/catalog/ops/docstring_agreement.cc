#include "catalog/ops/docstring_agreement.h"

#include <fmt/format.h>

#include "catalog/signature.h"
#include "catalog/signature_compare.h"

namespace npufuse::catalog {

std::vector<std::string> docstring_disagreements(const Operator& op, const DocstringEntry& docstring, Lang lang) {
  std::vector<std::string> out;
  bool zh = lang == Lang::Zh;
  std::string prototype = docstring_prototype(docstring.text, op.name);
  if (prototype.empty()) return out;  // nothing to compare with
  std::string error;
  auto sig = parse_signature(prototype, &error);
  if (!sig) {
    out.push_back(zh ? fmt::format("无法解析已安装docstring中的原型（{}）：{}", error, prototype)
                     : fmt::format("cannot read the installed docstring's prototype ({}): {}", error, prototype));
    return out;
  }
  for (const auto& d : compare_signatures(to_sig_params(op.params), sig->params)) {
    switch (d.kind) {
      case DriftKind::MissingInSchema:
        out.push_back(zh ? fmt::format("参数 {} 只在目录中，已安装的docstring没有", d.param)
                         : fmt::format("parameter {} is in the catalog but not in the installed docstring", d.param));
        break;
      case DriftKind::ExtraInSchema:
        out.push_back(zh ? fmt::format("参数 {} 只在已安装的docstring中，目录没有", d.param)
                         : fmt::format("parameter {} is in the installed docstring but not in the catalog", d.param));
        break;
      case DriftKind::DefaultDiffers:
        out.push_back(zh ? fmt::format("参数 {} 的默认值不同：目录 {}，docstring {}", d.param, d.catalog_side,
                                       d.other_side)
                         : fmt::format("parameter {} has another default: catalog {}, docstring {}", d.param,
                                       d.catalog_side, d.other_side));
        break;
      case DriftKind::KwOnlyDiffers:
        out.push_back(zh ? fmt::format("参数 {} 的传参方式不同：目录 {}，docstring {}", d.param, d.catalog_side,
                                       d.other_side)
                         : fmt::format("parameter {} is {} in the catalog but {} in the docstring", d.param,
                                       d.catalog_side, d.other_side));
        break;
      case DriftKind::NameDiffers:
        out.push_back(zh ? fmt::format("参数名不同：目录 {}，docstring {}", d.catalog_side, d.other_side)
                         : fmt::format("parameter named {} in the catalog is {} in the docstring", d.catalog_side,
                                       d.other_side));
        break;
      case DriftKind::OrderDiffers:
        out.push_back(zh ? fmt::format("参数 {} 的位置不同：目录第{}，docstring第{}", d.param,
                                       d.catalog_side.substr(9), d.other_side.substr(9))
                         : fmt::format("parameter {} is at {} in the catalog, {} in the docstring", d.param,
                                       d.catalog_side, d.other_side));
        break;
      default:
        break;
    }
  }
  return out;
}

}  // namespace npufuse::catalog
