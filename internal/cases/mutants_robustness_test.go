package cases

// robustnessMutants are the bugs of issue 26 ("Behaviours no test pins") that
// the robustness and evidence groups' server limits must catch.
var robustnessMutants = []mutant{}
