package cases

// governanceMutants are the bugs of issue 26 ("Behaviours no test pins") that
// the governance group must catch.
var governanceMutants = []mutant{}
