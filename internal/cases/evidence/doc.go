// Package evidence is the evidence group: the seed article's scenarios, whose lines make up evidence/output.txt, and the deliberately wrong clients of their negative controls.
package evidence
