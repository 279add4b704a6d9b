#!/bin/bash
# lead, session 17: final GPU call = session 16's final call B with the reviewer's imseg check off and without tests/imseg
# (carry .carry-msp10: pymeshlab cp312, fast-simplification wheel, PSB 101.off / 281.off; .carry-l16a: the shared-data
# subset). The same script and outputs ($OUT/lead/logB.txt, e2e_mesh.json, gpu_tests.txt) as session 16's, by its switches.
REV=0 TDIRS="tests/mesh tests/batch tests/framework" exec bash "$(dirname "$0")/../lead_session16/final_call_b.sh"
