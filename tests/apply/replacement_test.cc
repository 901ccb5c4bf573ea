#include <gtest/gtest.h>

#include "apply/apply_error.h"
#include "apply/replacement.h"
#include "frontend/parser.h"

namespace npufuse::apply {
namespace {

namespace ast = frontend::ast;

struct RuleFile {
  std::unique_ptr<frontend::ParsedFile> parsed;
  const ast::FunctionDef* replace = nullptr;
};

RuleFile rule_with(const std::string& text) {
  RuleFile r{frontend::parse_file("rule.py", text), nullptr};
  for (const ast::stmt* s : r.parsed->module->body)
    if (auto* fn = ast::as<ast::FunctionDef>(s); fn && fn->name == "replace") r.replace = fn;
  return r;
}

ReplacementRequest request_for(const RuleFile& r, std::map<std::string, std::string> arguments) {
  ReplacementRequest q;
  q.replace = r.replace;
  q.rule_source = &r.parsed->source;
  q.arguments = std::move(arguments);
  q.indent = "        ";
  return q;
}

TEST(Replacement, SingleReturnBecomesReturnWithArgumentsSubstituted) {
  RuleFile r = rule_with("def replace(hidden_states, weight, eps):\n"
                         "    return torch_npu.npu_rms_norm(hidden_states, weight, epsilon=eps)[0]\n");
  auto q = request_for(r, {{"hidden_states", "x"}, {"weight", "self.weight"}, {"eps", "self.variance_epsilon"}});
  EXPECT_EQ(replacement_text(q), "return torch_npu.npu_rms_norm(x, self.weight, epsilon=self.variance_epsilon)[0]");
}

TEST(Replacement, ResultAssignedToTargetsAndCompoundArgumentsParenthesised) {
  RuleFile r = rule_with("def replace(gate_up):\n    return torch_npu.npu_swiglu(gate_up, dim=-1) * gate_up\n");
  auto q = request_for(r, {{"gate_up", "a + b"}});
  q.targets = {"out"};
  EXPECT_EQ(replacement_text(q), "out = torch_npu.npu_swiglu((a + b), dim=-1) * (a + b)");
}

// A parameter the replacement assigns is its own local from then on: the
// model expression it was bound to is read before the store and never
// written to (npu_add_rms_norm's third output reuses the name `residual`).
// A per-tensor rule matched on one tensor: only that result's call is
// written, and the parameter only the other call reads needs no binding.
TEST(Replacement, OnlyTheKeptReturnsAreWritten) {
  RuleFile r = rule_with("def replace(xq, xk, table):\n"
                         "    t = table.real.to(xq.dtype)\n"
                         "    return (torch_npu.rot(xq, t), torch_npu.rot(xk, t))\n");
  auto q = request_for(r, {{"xq", "x"}, {"table", "freqs"}});
  q.kept_returns = {0};
  q.targets = {"out"};
  EXPECT_EQ(replacement_text(q), "t = freqs.real.to(x.dtype)\n        out = torch_npu.rot(x, t)");
  auto k = request_for(r, {{"xq", "q"}, {"xk", "k"}, {"table", "freqs"}});
  k.kept_returns = {0, 1};  // all of them: the return as written
  EXPECT_EQ(replacement_text(k), "t = freqs.real.to(q.dtype)\n        return (torch_npu.rot(q, t), torch_npu.rot(k, t))");
  auto only_k = request_for(r, {{"xk", "k"}, {"table", "freqs"}});
  only_k.kept_returns = {1};
  EXPECT_THROW(replacement_text(only_k), ApplyError);  // the table's dtype is read from xq, bound to nothing
  auto beyond = request_for(r, {{"xq", "x"}, {"table", "freqs"}});
  beyond.kept_returns = {0, 2};
  EXPECT_THROW(replacement_text(beyond), ApplyError);
}

// The statements that feed only a result the match does not cover (k's
// tables, when a per-tensor helper was matched on q) are left out with it;
// a statement that is no assignment to names may act by itself and stays.
TEST(Replacement, StatementsFeedingOnlyDroppedReturnsAreLeftOut) {
  RuleFile r = rule_with("def replace(q, k, cos):\n"
                         "    qh = q.shape[-1] // 2\n"
                         "    qc = torch.cat((cos[..., :qh], cos[..., :qh]), dim=-1)\n"
                         "    qc = qc.view(1, 1, -1, qc.shape[-1])\n"
                         "    kh = k.shape[-1] // 2\n"
                         "    kc = torch.cat((cos[..., :kh], cos[..., :kh]), dim=-1)\n"
                         "    torch_npu.warm(cos)\n"
                         "    cos[0] = cos[1]\n"
                         "    return torch_npu.rot(q, qc), torch_npu.rot(k, kc)\n");
  auto on_q = request_for(r, {{"q", "x"}, {"cos", "c"}});
  on_q.kept_returns = {0};
  on_q.targets = {"out"};
  EXPECT_EQ(replacement_text(on_q),
            "qh = x.shape[-1] // 2\n"
            "        qc = torch.cat((c[..., :qh], c[..., :qh]), dim=-1)\n"
            "        qc = qc.view(1, 1, -1, qc.shape[-1])\n"
            "        torch_npu.warm(c)\n"
            "        c[0] = c[1]\n"
            "        out = torch_npu.rot(x, qc)");
  auto on_k = request_for(r, {{"k", "y"}, {"cos", "c"}});
  on_k.kept_returns = {1};
  on_k.targets = {"out"};
  EXPECT_EQ(replacement_text(on_k),
            "kh = y.shape[-1] // 2\n"
            "        kc = torch.cat((c[..., :kh], c[..., :kh]), dim=-1)\n"
            "        torch_npu.warm(c)\n"
            "        c[0] = c[1]\n"
            "        out = torch_npu.rot(y, kc)");
  // A result that needs the parameter left unbound says so.
  RuleFile paired = rule_with("def replace(q, k, cos):\n"
                              "    torch_npu.rot_both(q, k, cos)\n"
                              "    return q, k\n");
  auto half = request_for(paired, {{"q", "x"}, {"cos", "c"}});
  half.kept_returns = {0};
  try {
    replacement_text(half);
    ADD_FAILURE() << "a replacement reading the unbound k was written";
  } catch (const ApplyError& e) {
    EXPECT_NE(std::string(e.what()).find("covers only some of the rule's results"), std::string::npos) << e.what();
  }
}

TEST(Replacement, AssignedParameterBecomesALocalNotAWriteToTheModelsName) {
  RuleFile r = rule_with("def replace(residual, hidden_states, weight, eps):\n"
                         "    normed, _, residual = torch_npu.npu_add_rms_norm(residual, hidden_states, weight, eps)\n"
                         "    return normed, residual\n");
  auto q = request_for(r, {{"residual", "self.h"}, {"hidden_states", "attn_out"}, {"weight", "w"}, {"eps", "1e-6"}});
  q.targets = {"normed", "after"};
  EXPECT_EQ(replacement_text(q),
            "normed, _, residual = torch_npu.npu_add_rms_norm(self.h, attn_out, w, 1e-6)\n"
            "        normed, after = normed, residual");
  // Where the model already uses the parameter's name, the local gets a fresh one.
  q.taken_names = {"residual", "normed"};
  EXPECT_EQ(replacement_text(q),
            "normed_npu, _, residual_npu = torch_npu.npu_add_rms_norm(self.h, attn_out, w, 1e-6)\n"
            "        normed, after = normed_npu, residual_npu");
}

TEST(Replacement, ParameterUpdatedInPlaceIsRefused) {
  RuleFile r = rule_with("def replace(x):\n    x += 1\n    return x\n");
  auto q = request_for(r, {{"x", "h"}});
  EXPECT_THROW(replacement_text(q), ApplyError);
}

TEST(Replacement, StatementsReindentedAndLocalsRenamedAwayFromModelNames) {
  RuleFile r = rule_with("def replace(q, k):\n"
                         "    q_b = q.transpose(1, 2)\n"
                         "    torch_npu.op(q_b,\n"
                         "                 k)\n"
                         "    return q_b, k\n");
  auto q = request_for(r, {{"q", "query"}, {"k", "key"}});
  q.indent = "    ";
  q.taken_names = {"q_b"};
  q.targets = {"rq", "rk"};
  EXPECT_EQ(replacement_text(q),
            "q_b_npu = query.transpose(1, 2)\n"
            "    torch_npu.op(q_b_npu,\n"
            "                 key)\n"
            "    rq, rk = q_b_npu, key");
}

TEST(Replacement, DocstringSkippedAndMissingArgumentRefused) {
  RuleFile r = rule_with("def replace(x, w):\n    \"\"\"doc\"\"\"\n    return f(x, w)\n");
  EXPECT_EQ(replacement_text(request_for(r, {{"x", "a"}, {"w", "b"}})), "return f(a, b)");
  EXPECT_THROW(replacement_text(request_for(r, {{"x", "a"}})), ApplyError);
  RuleFile no_return = rule_with("def replace(x):\n    f(x)\n");
  EXPECT_THROW(replacement_text(request_for(no_return, {{"x", "a"}})), ApplyError);
}

}  // namespace
// A continuation line the rule aligned under its call's open bracket stays
// aligned where a rename (`out` taken in the model) or the `targets = `
// prefix moved that bracket; one indented by a fixed step keeps its step.
TEST(Replacement, HangingIndentsFollowTheirBracket) {
  RuleFile r = rule_with("def replace(x, w):\n"
                         "    out = torch_npu.op(x.reshape(-1, 4), w, perm=[1, 0, 2],\n"
                         "                       scale=2)\n"
                         "    return torch_npu.op2(out, w,\n"
                         "                         flag=True) + torch_npu.op3(\n"
                         "        out)\n");
  auto q = request_for(r, {{"x", "hidden_states"}, {"w", "self.weight"}});
  q.taken_names = {"out"};
  q.targets = {"result"};
  EXPECT_EQ(replacement_text(q),
            "out_npu = torch_npu.op(hidden_states.reshape(-1, 4), self.weight, perm=[1, 0, 2],\n"
            "                               scale=2)\n"
            "        result = torch_npu.op2(out_npu, self.weight,\n"
            "                               flag=True) + torch_npu.op3(\n"
            "            out_npu)");
}

}  // namespace npufuse::apply
