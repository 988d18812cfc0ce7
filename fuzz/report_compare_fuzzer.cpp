// libFuzzer target: report_compare's inputs. Each input is read both ways report_compare reads a
// file: as a downloaded JSON (report::check_data) and as a report.html (report::read_data through
// the in-memory file, then check_data). Any outcome but accepted data or an xtgrad::Error (a
// crash, a sanitizer report, another exception, a hang) is a finding; so is accepted data whose
// comparison page cannot be built, or whose page does not give its data back as a report's, or
// that adds a </script> to the page. The page's data is also read as a resumed run reads the
// earlier run's page (report::earlier_steps): an Error or steps no later than the resume.
#include <xtgrad/autograd/error.hpp>
#include <xtgrad/report/earlier_steps.hpp>
#include <xtgrad/report/page.hpp>
#include <xtgrad/report/run_report.hpp>
#include "fuzz/fuzz_input.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

namespace {

std::size_t script_ends(const std::string& page) {
    std::size_t n = 0;
    for (std::size_t at = page.find("</script>"); at != std::string::npos; at = page.find("</script>", at + 1)) ++n;
    return n;
}

// Data check_data accepted must make a comparison page whose embedded data is again a report's.
void compare(const std::string& data) {
    static const std::size_t template_ends = script_ends(xtgrad::report::page_html("{}", false));
    std::string page;
    try {
        page = xtgrad::report::comparison_page({{"run", data}});
    } catch (const xtgrad::Error&) {
        std::abort();  // check_data said it was a report's
    }
    if (script_ends(page) != template_ends) std::abort();  // a label ended the page's script
    try {
        (void)xtgrad::report::data_of_page(page, "comparison");
    } catch (const xtgrad::Error&) {
        std::abort();
    }
}

// What a resumed run keeps of an earlier page: only steps up to the resume, each list as long as its steps.
void earlier(const std::string& data) {
    try {
        const xtgrad::report::EarlierSteps kept = xtgrad::report::earlier_steps(data, 3, "fuzz");
        for (const auto& s : kept.scalars)
            if (s.steps.size() != s.values.size() || s.steps.empty() || s.steps.back() > 3) std::abort();
        for (const auto& [stat, modules] : kept.stats)
            for (const auto& [module, values] : modules)
                if (values.size() != kept.stat_steps.size()) std::abort();
    } catch (const xtgrad::Error&) {
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);
    try {  // as report_compare reads a .json
        earlier(text);
        xtgrad::report::check_data(text, "report_compare: 'input.json'");
        compare(text);
    } catch (const xtgrad::Error&) {
    }
    try {  // as it reads a report.html
        const std::string embedded = xtgrad::report::read_data(xtgrad::fuzz::input_file(data, size));
        xtgrad::report::check_data(embedded, "report_compare: 'report.html'");
        compare(embedded);
    } catch (const xtgrad::Error&) {
    }
    return 0;
}
