#include "report/html_words.h"

#include "report/plan_names.h"

namespace npufuse::report {
namespace {

const HtmlWords kEn = {
    "en",
    "Fusion plan",
    "npufuse {} · plan schema {}",
    "Contents",
    "Inputs",
    "file",
    "setting",
    "value",
    "config",
    "none given",
    "chip",
    "TP / EP / DP",
    "quantisation",
    "stage",
    "torch_npu version",
    "rules",
    "catalog",
    "embedded",
    "unknown",
    "Facts",
    "Known",
    "fact",
    "source",
    "No facts are known: every check that needs one answers unknown.",
    "Asked for",
    "No check is waiting for a fact.",
    "needed by",
    "Step 1: modules",
    "module",
    "chains",
    "stages",
    "No fusable or blocked chain was found in these files.",
    "Step 2: reference-chain coverage",
    "covered by",
    "left open",
    "blocked",
    "Dataflow of each block",
    "Each block's forward with its submodules and helpers inlined, as the matcher reads it. The ops of a chain "
    "are coloured by their candidate's status; click one to go to its card.",
    "No decoder layer, attention or MoE class was recognised, so there is nothing to draw.",
    "op outside any chain",
    "Step 3: candidates",
    "Filters",
    "status",
    "all",
    "shown",
    "id",
    "rule",
    "where",
    "more places",
    "matched lines",
    "instance",
    "APIs",
    "confidence",
    "Evidence",
    "Constraint checks",
    "API",
    "constraint",
    "answer",
    "severity",
    "what it says",
    "doc",
    "No catalog constraint was evaluated for this candidate.",
    "Facts to give",
    "Prerequisites",
    "mechanical (npufuse apply does it)",
    "by hand",
    "Intermediates the fusion would no longer produce",
    "Blocking constraints",
    "Why the near-miss does not match",
    "Verification cut",
    "Source",
    "source file not readable",
    "Alternatives for this chain (less preferred)",
    "alternative",
    "in the pictures of",
    "New-operator requirements",
    "No sub-chain was left without a fused operator.",
    "subgraph",
    "inputs",
    "outputs",
    "why nothing fits",
    "Step 4: review",
    "The four review items of the analysis stage; an unchecked item lists what fails and must be resolved before "
    "patching.",
    "Notes",
    "laid out by graphviz dot",
    "laid out by the built-in layered layout",
    "too many ops to draw",
};

const HtmlWords kZh = {
    "zh-CN",
    "融合方案",
    "npufuse {} · 方案格式版本 {}",
    "目录",
    "输入",
    "文件",
    "设置",
    "取值",
    "配置",
    "未提供",
    "芯片",
    "TP / EP / DP",
    "量化",
    "阶段",
    "torch_npu 版本",
    "规则",
    "算子目录",
    "内置",
    "未知",
    "事实",
    "已知",
    "事实",
    "来源",
    "没有已知事实：所有依赖事实的检查都答“未知”。",
    "待补充",
    "没有检查在等待事实。",
    "所需检查",
    "第一步：模块",
    "模块",
    "链路",
    "阶段",
    "在这些文件中未找到可融合或被阻塞的链路。",
    "第二步：参考链路覆盖",
    "覆盖算子",
    "未覆盖",
    "被阻塞",
    "各模块的数据流",
    "每个模块的 forward，子模块与辅助函数已内联，即匹配器看到的计算图。链路中的算子按候选状态着色，点击可跳到对应的候选卡片。",
    "未识别出解码层、注意力或 MoE 类，没有可画的数据流。",
    "不在任何链路中的算子",
    "第三步：候选清单",
    "筛选",
    "状态",
    "全部",
    "显示",
    "编号",
    "规则",
    "位置",
    "其他位置",
    "匹配的代码行",
    "实例",
    "API",
    "置信度",
    "依据",
    "约束检查",
    "API",
    "约束",
    "结论",
    "级别",
    "内容",
    "文档",
    "此候选没有需要检查的算子目录约束。",
    "需提供的事实",
    "前置条件",
    "机械改造（npufuse apply 自动完成）",
    "需手工完成",
    "融合后不再产生的中间结果",
    "阻塞约束",
    "近似匹配不成立的原因",
    "最小验证切口",
    "源代码",
    "无法读取源文件",
    "同一链路的备选方案（次选）",
    "备选",
    "出现在以下模块的数据流图中",
    "新增融合算子需求",
    "没有缺少融合算子的子链路。",
    "子图语义",
    "输入",
    "输出",
    "无现成算子的依据",
    "第四步：分析阶段审查",
    "分析阶段的四项审查；未勾选的项列出不通过的内容，须在改代码前解决。",
    "备注",
    "由 graphviz dot 布局",
    "由内置分层布局绘制",
    "算子过多，不绘制",
};

}  // namespace

const HtmlWords& html_words(Lang lang) { return lang == Lang::Zh ? kZh : kEn; }

std::string status_label(plan::Status s, Lang lang) {
  if (lang == Lang::En) return status_word(s);
  switch (s) {
    case plan::Status::Candidate: return "候选";
    case plan::Status::CandidateWithPrerequisites: return "候选（需前置改造）";
    case plan::Status::NotApplicable: return "不适配";
    case plan::Status::NoFusedOp: return "无现成融合算子";
  }
  return status_word(s);
}

std::string answer_label(check::Answer a, Lang lang) {
  if (lang == Lang::En) return check::answer_name(a);
  switch (a) {
    case check::Answer::Holds: return "满足";
    case check::Answer::Violated: return "违反";
    case check::Answer::Unknown: return "未知";
    case check::Answer::NotApplicable: return "不涉及";
  }
  return check::answer_name(a);
}

std::string stage_label(const std::string& stage, Lang lang) {
  if (lang == Lang::En) return stage;
  if (stage == "prefill") return "Prefill";
  if (stage == "decode") return "Decode";
  return stage;
}

}  // namespace npufuse::report
